//! The `api_tokens` table: merchant API tokens, stored as SHA-256 only.

use sqlx::{Any, Executor};

pub struct NewToken<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub hash: &'a str,
    pub prefix: &'a str,
    pub created_by: &'a str,
    pub now: i64,
}

pub async fn insert<'e>(
    e: impl Executor<'e, Database = Any>,
    t: &NewToken<'_>,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO api_tokens (id, name, token_hash, token_prefix, created_at, created_by) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(t.id)
    .bind(t.name)
    .bind(t.hash)
    .bind(t.prefix)
    .bind(t.now)
    .bind(t.created_by)
    .execute(e)
    .await?;
    Ok(())
}

/// The name of the unrevoked token with this hash, marking it used.
pub async fn authenticate<'e>(
    e: impl Executor<'e, Database = Any>,
    hash: &str,
    now: i64,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar(
        "UPDATE api_tokens SET last_used_at = $1 WHERE token_hash = $2 AND revoked_at IS NULL RETURNING name",
    )
    .bind(now)
    .bind(hash)
    .fetch_optional(e)
    .await
}
