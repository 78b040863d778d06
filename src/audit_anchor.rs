//! The audit log watched from outside the database. Every few seconds each
//! instance signs the chain's head and keeps it in a file beside the audit
//! key (`audit.anchor`), never moving it back. Someone who can write the
//! database may delete the newest entries and rewind `audit_head` so the
//! chain still verifies; the anchor remembers the entry they removed, so
//! the next watch raises a CRITICAL `audit_tampered` alert and
//! `reckon audit verify` fails, without waiting for a checkpoint kept by
//! hand.

use crate::domain::{AlertKind, AlertSeverity};
use crate::store::alerts::{self, NewAlert};
use crate::store::audit::{self, Checkpoint};
use crate::store::{Db, now_micros};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const FILE_NAME: &str = "audit.anchor";

/// How often the head is anchored and the anchor checked.
pub const EVERY: Duration = Duration::from_secs(10);

pub fn path(data_dir: &Path) -> PathBuf {
    data_dir.join(FILE_NAME)
}

/// The anchor kept at `path`, if there is one.
pub fn read(path: &Path) -> Result<Option<Checkpoint>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Checkpoint::parse(&text)
            .map(Some)
            .map_err(|why| format!("the audit anchor {} is damaged: {why}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!(
            "cannot read the audit anchor {}: {e}",
            path.display()
        )),
    }
}

/// Replaces the anchor in one step (a crash leaves the old one or the
/// new), unless the one on file is already as far on: two watches at once
/// (the loop and a command, or two instances on one data directory) never
/// move it back. False when it was left as it is.
fn write(path: &Path, cp: &Checkpoint) -> std::io::Result<bool> {
    let lock = std::fs::File::create(path.with_extension("anchor.lock"))?;
    lock.lock()?;
    if let Ok(Some(on_file)) = read(path)
        && on_file.seq >= cp.seq
    {
        return Ok(false);
    }
    let tmp = path.with_extension(format!("anchor.{}.tmp", uuid::Uuid::new_v4().simple()));
    let mut file = std::fs::File::create(&tmp)?;
    writeln!(file, "{}", cp.line())?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)?;
    Ok(true)
}

/// What one watch found.
#[derive(Debug, PartialEq, Eq)]
pub enum Watch {
    /// The head moved on (or was first anchored): anchored at this entry.
    Anchored(i64),
    /// Nothing new since the anchor.
    Unchanged,
    /// The log no longer holds what the anchor saw: alerted.
    Tampered(String),
}

/// Checks the database against the anchor, then moves the anchor to the
/// head. A log that lost what the anchor saw raises the alert and keeps
/// the anchor as it is, so the evidence stays.
pub async fn watch(db: &Db, path: &Path) -> anyhow::Result<Watch> {
    let (seq, hash) = audit::head(&db.pool).await?;
    let anchor = match read(path) {
        Ok(a) => a,
        Err(why) => return tampered(db, why).await,
    };
    if let Some(a) = &anchor {
        if let Err(why) = a.is_genuine(&db.audit) {
            return tampered(db, format!("the audit anchor {}: {why}", path.display())).await;
        }
        if a.seq > seq {
            return tampered(
                db,
                format!(
                    "the audit log ends at entry {seq}, but entry {} was written (anchored {}): entries were deleted",
                    a.seq, a.at
                ),
            )
            .await;
        }
        if a.seq > 0 && audit::hash_of(&db.pool, a.seq).await?.as_deref() != Some(a.hash.as_str()) {
            return tampered(
                db,
                format!(
                    "audit entry {} is not the one anchored {}: the log was rewritten",
                    a.seq, a.at
                ),
            )
            .await;
        }
        if a.seq == seq {
            return Ok(Watch::Unchanged);
        }
    }
    let Some(cp) = Checkpoint::sign(&db.audit, seq, hash) else {
        anyhow::bail!("no audit key to sign the anchor with ({})", db.audit.source);
    };
    Ok(match write(path, &cp)? {
        true => Watch::Anchored(seq),
        false => Watch::Unchanged,
    })
}

async fn tampered(db: &Db, why: String) -> anyhow::Result<Watch> {
    tracing::error!("{why}");
    // One alert per finding; a finding that changes is a new alert.
    let key = format!("audit_tampered:{}", hex::encode(&sha2_256(&why)[..8]));
    alerts::raise_alert(
        &db.pool,
        &NewAlert {
            dedupe_key: &key,
            kind: AlertKind::AuditTampered,
            severity: AlertSeverity::Critical,
            payment_no: None,
            message: &why,
            trace_id: None,
            now: now_micros(),
        },
    )
    .await?;
    Ok(Watch::Tampered(why))
}

fn sha2_256(text: &str) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(text.as_bytes()).into()
}

/// Watches forever, every [`EVERY`].
pub async fn run(db: Db, path: PathBuf) {
    loop {
        if let Err(e) = watch(&db, &path).await {
            tracing::error!(error = %e, path = %path.display(), "audit anchor");
        }
        tokio::time::sleep(EVERY).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::audit_keys::Keys;

    #[test]
    fn a_later_write_of_an_older_head_leaves_the_anchor_where_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let keys = Keys::load(dir.path(), 1, |_| None).unwrap();
        let path = path(dir.path());
        let newer = Checkpoint::sign(&keys, 7, "77".repeat(32)).unwrap();
        let older = Checkpoint::sign(&keys, 5, "55".repeat(32)).unwrap();
        assert!(write(&path, &newer).unwrap());
        // A watch that read the head before the other wrote comes second.
        assert!(!write(&path, &older).unwrap());
        assert_eq!(read(&path).unwrap().unwrap().seq, 7);
        let newest = Checkpoint::sign(&keys, 9, "99".repeat(32)).unwrap();
        assert!(write(&path, &newest).unwrap());
        assert_eq!(read(&path).unwrap().unwrap().seq, 9);
    }
}
