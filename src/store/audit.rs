//! The append-only `audit_log`. Entries are only ever inserted; each carries
//! the previous entry's hash, so editing or deleting a row breaks the chain
//! that `verify` walks. The hash is an HMAC under a key kept outside the
//! database (`audit_keys`), so the chain cannot be recomputed by someone who
//! can only write the database; a signed checkpoint of the head, kept
//! elsewhere, catches even a rewrite by someone who has the key.

use super::audit_keys::Keys;
use futures_util::TryStreamExt;
use hmac::Mac;
use sha2::{Digest, Sha256};
use sqlx::{Any, AnyConnection, AnyPool};

pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// What happened, to what, by whom; before and after as JSON (never secrets).
#[derive(Clone, Debug)]
pub struct Entry {
    pub actor: String,
    pub action: &'static str,
    pub object_type: &'static str,
    pub object_id: String,
    pub before: Option<serde_json::Value>,
    pub after: Option<serde_json::Value>,
}

/// Appends inside the caller's write transaction. Taking the next place
/// updates the one `audit_head` row first, so a concurrent appender waits
/// for this transaction and then continues the chain from its entry.
pub async fn append(
    conn: &mut AnyConnection,
    keys: &Keys,
    entry: &Entry,
    at: i64,
) -> sqlx::Result<i64> {
    let key = keys
        .signing()
        .ok_or_else(|| sqlx::Error::Configuration(keys.source.clone().into()))?;
    let (seq, prev_hash): (i64, String) =
        sqlx::query_as("UPDATE audit_head SET seq = seq + 1 WHERE id = 1 RETURNING seq, hash")
            .fetch_one(&mut *conn)
            .await?;
    let before = entry.before.as_ref().map(|v| v.to_string());
    let after = entry.after.as_ref().map(|v| v.to_string());
    let row = StoredEntry {
        seq,
        at,
        actor: entry.actor.clone(),
        action: entry.action.to_owned(),
        object_type: entry.object_type.to_owned(),
        object_id: entry.object_id.clone(),
        before_json: before,
        after_json: after,
        prev_hash,
        hash: String::new(),
        key_id: Some(key.id.clone()),
    };
    let hash = row.keyed_hash(key);
    sqlx::query::<Any>(
        "INSERT INTO audit_log (seq, at, actor, action, object_type, object_id, before_json, after_json, prev_hash, hash, key_id) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    )
    .bind(row.seq)
    .bind(row.at)
    .bind(&row.actor)
    .bind(&row.action)
    .bind(&row.object_type)
    .bind(&row.object_id)
    .bind(&row.before_json)
    .bind(&row.after_json)
    .bind(&row.prev_hash)
    .bind(&hash)
    .bind(&key.id)
    .execute(&mut *conn)
    .await?;
    sqlx::query("UPDATE audit_head SET hash = $1 WHERE id = 1")
        .bind(&hash)
        .execute(&mut *conn)
        .await?;
    Ok(seq)
}

/// An entry on its own, for what changes no row: a download of raw data,
/// a sign-in. Its own write transaction.
pub async fn record(db: &super::Db, entry: &Entry, at: i64) -> super::Result<()> {
    let mut tx = db.begin_write().await?;
    append(&mut tx, &db.audit, entry, at).await?;
    tx.commit().await?;
    Ok(())
}

#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
pub struct StoredEntry {
    pub seq: i64,
    pub at: i64,
    pub actor: String,
    pub action: String,
    pub object_type: String,
    pub object_id: String,
    pub before_json: Option<String>,
    pub after_json: Option<String>,
    pub prev_hash: String,
    pub hash: String,
    /// The key whose HMAC `hash` is; none for entries written before the
    /// log was keyed (plain SHA-256).
    pub key_id: Option<String>,
}

impl StoredEntry {
    /// Every field and the previous hash, each length-prefixed so no two
    /// different entries serialize alike.
    fn fields(&self) -> [String; 9] {
        let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "\u{0}null".into());
        [
            self.seq.to_string(),
            self.at.to_string(),
            self.actor.clone(),
            self.action.clone(),
            self.object_type.clone(),
            self.object_id.clone(),
            opt(&self.before_json),
            opt(&self.after_json),
            self.prev_hash.clone(),
        ]
    }

    /// SHA-256, as entries were hashed before the log was keyed.
    pub fn unkeyed_hash(&self) -> String {
        let mut h = Sha256::new();
        for field in self.fields() {
            h.update((field.len() as u64).to_be_bytes());
            h.update(field.as_bytes());
        }
        hex::encode(h.finalize())
    }

    /// HMAC-SHA256 under `key`, over the same fields and the key's id.
    pub fn keyed_hash(&self, key: &super::audit_keys::Key) -> String {
        let mut m = key.mac();
        for field in self.fields().iter().chain([&key.id]) {
            m.update(&(field.len() as u64).to_be_bytes());
            m.update(field.as_bytes());
        }
        hex::encode(m.finalize().into_bytes())
    }
}

#[derive(Debug, PartialEq, Eq)]
pub struct Verdict {
    pub entries: u64,
    /// Entries from before the log was keyed (plain SHA-256).
    pub unkeyed: u64,
    /// The first entry where the chain breaks, and why.
    pub first_broken: Option<(i64, String)>,
}

/// The head of the chain, signed: kept outside the database, it proves
/// that no entry up to `seq` has changed since, even against someone who
/// can write the database and has the key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    pub seq: i64,
    pub hash: String,
    pub at: String,
    pub key_id: String,
    pub mac: String,
}

const CHECKPOINT_PREFIX: &str = "reckon-audit-checkpoint v1";

impl Checkpoint {
    fn signed_text(seq: i64, hash: &str, at: &str, key_id: &str) -> String {
        format!("{CHECKPOINT_PREFIX}|{seq}|{hash}|{at}|{key_id}")
    }

    /// The head `seq`/`hash` signed now with the signing key, if any.
    pub fn sign(keys: &Keys, seq: i64, hash: String) -> Option<Checkpoint> {
        let key = keys.signing()?;
        let at = jiff::Timestamp::now()
            .strftime("%Y-%m-%dT%H:%M:%SZ")
            .to_string();
        let mut m = key.mac();
        m.update(Self::signed_text(seq, &hash, &at, &key.id).as_bytes());
        Some(Checkpoint {
            seq,
            hash,
            at,
            key_id: key.id.clone(),
            mac: hex::encode(m.finalize().into_bytes()),
        })
    }

    /// One line: `reckon-audit-checkpoint v1 seq=… hash=… at=… key=… mac=…`.
    pub fn line(&self) -> String {
        format!(
            "{CHECKPOINT_PREFIX} seq={} hash={} at={} key={} mac={}",
            self.seq, self.hash, self.at, self.key_id, self.mac
        )
    }

    pub fn parse(text: &str) -> Result<Checkpoint, String> {
        let rest = text
            .trim()
            .strip_prefix(CHECKPOINT_PREFIX)
            .ok_or_else(|| format!("a checkpoint starts `{CHECKPOINT_PREFIX}`"))?;
        let field = |name: &str| {
            rest.split_whitespace()
                .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
                .map(str::to_owned)
                .ok_or_else(|| format!("the checkpoint has no {name}="))
        };
        Ok(Checkpoint {
            seq: field("seq")?
                .parse()
                .map_err(|_| "the checkpoint's seq is not a number".to_owned())?,
            hash: field("hash")?,
            at: field("at")?,
            key_id: field("key")?,
            mac: field("mac")?,
        })
    }

    /// Whether the checkpoint was made by Reckon with one of `keys`.
    pub fn is_genuine(&self, keys: &Keys) -> Result<(), String> {
        let key = keys.by_id(&self.key_id).ok_or_else(|| {
            format!(
                "the checkpoint was signed by key {}, which {} does not hold",
                self.key_id, keys.source
            )
        })?;
        let mut m = key.mac();
        m.update(Self::signed_text(self.seq, &self.hash, &self.at, &self.key_id).as_bytes());
        let want = hex::decode(&self.mac).map_err(|_| "the checkpoint's mac is not hex")?;
        m.verify_slice(&want)
            .map_err(|_| "the checkpoint's signature does not match: it is not genuine".to_owned())
    }
}

/// The number the next entry will have.
pub async fn next_seq(pool: &AnyPool) -> sqlx::Result<i64> {
    let seq: i64 = sqlx::query_scalar("SELECT seq FROM audit_head WHERE id = 1")
        .fetch_one(pool)
        .await?;
    Ok(seq + 1)
}

/// The head of the chain: the last entry's number and hash.
pub async fn head(pool: &AnyPool) -> sqlx::Result<(i64, String)> {
    sqlx::query_as("SELECT seq, hash FROM audit_head WHERE id = 1")
        .fetch_one(pool)
        .await
}

/// The stored hash of entry `seq`, if it is there.
pub async fn hash_of(pool: &AnyPool, seq: i64) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar("SELECT hash FROM audit_log WHERE seq = $1")
        .bind(seq)
        .fetch_optional(pool)
        .await
}

/// Signs the head of the chain as it is now.
pub async fn checkpoint(pool: &AnyPool, keys: &Keys) -> sqlx::Result<Checkpoint> {
    let (seq, hash) = head(pool).await?;
    Checkpoint::sign(keys, seq, hash)
        .ok_or_else(|| sqlx::Error::Configuration(keys.source.clone().into()))
}

/// Walks the whole log in order, streaming; with `against`, also proves
/// that the entry the checkpoint names still has the hash it saw.
pub async fn verify(
    pool: &AnyPool,
    keys: &Keys,
    against: Option<&Checkpoint>,
) -> sqlx::Result<Verdict> {
    let mut rows = sqlx::query_as::<_, StoredEntry>(
        "SELECT seq, at, actor, action, object_type, object_id, before_json, after_json, prev_hash, hash, key_id \
         FROM audit_log ORDER BY seq",
    )
    .fetch(pool);
    let mut entries = 0u64;
    let mut unkeyed = 0u64;
    let mut expected_seq = 1i64;
    let mut prev_hash = GENESIS.to_owned();
    let broken = |entries, unkeyed, seq, why: String| Verdict {
        entries,
        unkeyed,
        first_broken: Some((seq, why)),
    };
    if let Some(cp) = against
        && cp.seq == 0
        && cp.hash != GENESIS
    {
        return Ok(broken(
            0,
            0,
            0,
            "the checkpoint is of no entry but names a hash".into(),
        ));
    }
    while let Some(row) = rows.try_next().await? {
        entries += 1;
        let computed = match &row.key_id {
            Some(id) => keys.by_id(id).map(|k| row.keyed_hash(k)),
            None => Some(row.unkeyed_hash()),
        };
        let problem = if row.seq != expected_seq {
            Some(format!(
                "expected entry {expected_seq}, found {} (entries missing)",
                row.seq
            ))
        } else if row.prev_hash != prev_hash {
            Some("previous-hash link does not match the entry before".to_owned())
        } else if row.key_id.is_none() && keys.keyed_from.is_some_and(|f| row.seq >= f) {
            Some(format!(
                "unkeyed, but the log is keyed from entry {} (rewritten without the key)",
                keys.keyed_from.unwrap_or_default()
            ))
        } else if row.key_id.is_none() && entries > unkeyed + 1 {
            Some("an unkeyed entry after keyed ones (rewritten without the key)".to_owned())
        } else if computed.is_none() {
            Some(format!(
                "signed by key {}, which {} does not hold",
                row.key_id.as_deref().unwrap_or(""),
                keys.source
            ))
        } else if computed.as_deref() != Some(row.hash.as_str()) {
            Some("contents do not match the stored hash (edited)".to_owned())
        } else {
            against
                .filter(|cp| cp.seq == row.seq && cp.hash != row.hash)
                .map(|cp| {
                    format!(
                        "differs from the checkpoint of {}: the log was rewritten up to here",
                        cp.at
                    )
                })
        };
        if let Some(problem) = problem {
            return Ok(broken(entries, unkeyed, row.seq, problem));
        }
        if row.key_id.is_none() {
            unkeyed += 1;
        }
        expected_seq = row.seq + 1;
        prev_hash = row.hash;
    }
    drop(rows);
    // The head remembers the last entry: a deleted tail shows here.
    let (head_seq, head_hash): (i64, String) =
        sqlx::query_as("SELECT seq, hash FROM audit_head WHERE id = 1")
            .fetch_one(pool)
            .await?;
    if head_seq != expected_seq - 1 || head_hash != prev_hash {
        return Ok(broken(
            entries,
            unkeyed,
            expected_seq,
            format!(
                "the log ends at entry {} but {head_seq} were written (entries deleted at the end)",
                expected_seq - 1
            ),
        ));
    }
    if let Some(cp) = against
        && cp.seq > expected_seq - 1
    {
        return Ok(broken(
            entries,
            unkeyed,
            expected_seq,
            format!(
                "the log ends at entry {} but the checkpoint of {} saw entry {}",
                expected_seq - 1,
                cp.at,
                cp.seq
            ),
        ));
    }
    Ok(Verdict {
        entries,
        unkeyed,
        first_broken: None,
    })
}

// ---- The console ----------------------------------------------------

/// The replays of a stored callback: when, by whom, and what each did
/// (the entry's `after`, JSON).
pub async fn replays_of<'e>(
    e: impl sqlx::Executor<'e, Database = Any>,
    callback_row: &str,
) -> sqlx::Result<Vec<(i64, String, Option<String>)>> {
    sqlx::query_as(
        "SELECT at, actor, after_json FROM audit_log WHERE action = 'callback.replay' AND object_type = 'callback' \
           AND object_id = $1 ORDER BY seq",
    )
    .bind(callback_row)
    .fetch_all(e)
    .await
}

/// The comments on a proposal, oldest first: when, by whom, and the entry's
/// `after` (JSON, with the comment).
pub async fn proposal_comments<'e>(
    e: impl sqlx::Executor<'e, Database = Any>,
    proposal: &str,
) -> sqlx::Result<Vec<(i64, String, Option<String>)>> {
    sqlx::query_as(
        "SELECT at, actor, after_json FROM audit_log WHERE action = 'proposal.comment' AND object_type = 'proposal' \
           AND object_id = $1 ORDER BY seq",
    )
    .bind(proposal)
    .fetch_all(e)
    .await
}
// ---- end of the console ---------------------------------------------
