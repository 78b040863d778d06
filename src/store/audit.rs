//! The append-only `audit_log`. Entries are only ever inserted; each carries
//! the previous entry's hash, so editing or deleting a row breaks the chain
//! that `verify` walks.

use futures_util::TryStreamExt;
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
pub async fn append(conn: &mut AnyConnection, entry: &Entry, at: i64) -> sqlx::Result<i64> {
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
    };
    let hash = row.compute_hash();
    sqlx::query::<Any>(
        "INSERT INTO audit_log (seq, at, actor, action, object_type, object_id, before_json, after_json, prev_hash, hash) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
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
    .execute(&mut *conn)
    .await?;
    sqlx::query("UPDATE audit_head SET hash = $1 WHERE id = 1")
        .bind(&hash)
        .execute(&mut *conn)
        .await?;
    Ok(seq)
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
}

impl StoredEntry {
    /// SHA-256 over every field and the previous hash, each length-prefixed
    /// so no two different entries serialize alike.
    pub fn compute_hash(&self) -> String {
        let mut h = Sha256::new();
        let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "\u{0}null".into());
        for field in [
            self.seq.to_string(),
            self.at.to_string(),
            self.actor.clone(),
            self.action.clone(),
            self.object_type.clone(),
            self.object_id.clone(),
            opt(&self.before_json),
            opt(&self.after_json),
            self.prev_hash.clone(),
        ] {
            h.update((field.len() as u64).to_be_bytes());
            h.update(field.as_bytes());
        }
        hex::encode(h.finalize())
    }
}

#[derive(Debug, PartialEq, Eq)]
pub struct Verdict {
    pub entries: u64,
    /// The first entry where the chain breaks, and why.
    pub first_broken: Option<(i64, String)>,
}

/// Walks the whole log in order, streaming.
pub async fn verify(pool: &AnyPool) -> sqlx::Result<Verdict> {
    let mut rows = sqlx::query_as::<_, StoredEntry>(
        "SELECT seq, at, actor, action, object_type, object_id, before_json, after_json, prev_hash, hash \
         FROM audit_log ORDER BY seq",
    )
    .fetch(pool);
    let mut entries = 0u64;
    let mut expected_seq = 1i64;
    let mut prev_hash = GENESIS.to_owned();
    while let Some(row) = rows.try_next().await? {
        entries += 1;
        let problem = if row.seq != expected_seq {
            Some(format!(
                "expected entry {expected_seq}, found {} (entries missing)",
                row.seq
            ))
        } else if row.prev_hash != prev_hash {
            Some("previous-hash link does not match the entry before".to_owned())
        } else if row.compute_hash() != row.hash {
            Some("contents do not match the stored hash (edited)".to_owned())
        } else {
            None
        };
        if let Some(problem) = problem {
            return Ok(Verdict {
                entries,
                first_broken: Some((row.seq, problem)),
            });
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
        return Ok(Verdict {
            entries,
            first_broken: Some((
                expected_seq,
                format!(
                    "the log ends at entry {} but {head_seq} were written (entries deleted at the end)",
                    expected_seq - 1
                ),
            )),
        });
    }
    Ok(Verdict {
        entries,
        first_broken: None,
    })
}
