//! The `refused_callbacks` table: webhooks refused before storing, kept
//! with the reason and an excerpt, pruned to a number of rows per provider.

use sqlx::{Any, Executor};

/// Bytes of a refused body kept.
pub const EXCERPT: usize = 4096;

pub struct Refused<'a> {
    pub provider: &'a str,
    pub kind: &'a str,
    pub reason: &'a str,
    pub headers_json: &'a str,
    pub body: &'a [u8],
    /// The body's full length (it may not have been read whole).
    pub body_len: i64,
    pub body_hash: &'a str,
    pub payment_no: Option<&'a str>,
    pub trace_id: &'a str,
    pub now: i64,
}

pub async fn insert<'e>(e: impl Executor<'e, Database = Any>, r: &Refused<'_>) -> sqlx::Result<()> {
    let reason: String = r.reason.chars().take(500).collect();
    sqlx::query(
        "INSERT INTO refused_callbacks (id, provider, kind, reason, headers_json, body_excerpt, body_len, body_hash, payment_no, trace_id, received_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    )
    .bind(uuid::Uuid::now_v7().to_string())
    .bind(r.provider)
    .bind(r.kind)
    .bind(reason)
    .bind(r.headers_json)
    .bind(&r.body[..r.body.len().min(EXCERPT)])
    .bind(r.body_len)
    .bind(r.body_hash)
    .bind(r.payment_no)
    .bind(r.trace_id)
    .bind(r.now)
    .execute(e)
    .await?;
    Ok(())
}

/// Keeps the newest `keep` rows of a provider.
pub async fn prune<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    keep: i64,
) -> sqlx::Result<u64> {
    let done = sqlx::query(
        "DELETE FROM refused_callbacks WHERE provider = $1 AND id NOT IN \
         (SELECT id FROM refused_callbacks WHERE provider = $1 ORDER BY received_at DESC, id DESC LIMIT $2)",
    )
    .bind(provider)
    .bind(keep)
    .execute(e)
    .await?;
    Ok(done.rows_affected())
}
