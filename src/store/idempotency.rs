//! The `idempotency_keys` table: the first answer to a merchant's
//! `Idempotency-Key` is stored with the request's hash and served again.

use sqlx::{Any, Executor};

/// Takes the key inside the caller's transaction. False when it was taken
/// before (the caller then reads the stored answer).
pub async fn take<'e>(
    e: impl Executor<'e, Database = Any>,
    scope: &str,
    key: &str,
    request_hash: &str,
    now: i64,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "INSERT INTO idempotency_keys (scope, idem_key, request_hash, response_status, response_body, created_at) \
         VALUES ($1, $2, $3, 0, '', $4) ON CONFLICT (scope, idem_key) DO NOTHING",
    )
    .bind(scope)
    .bind(key)
    .bind(request_hash)
    .bind(now)
    .execute(e)
    .await?;
    Ok(done.rows_affected() == 1)
}

#[derive(Debug, sqlx::FromRow)]
pub struct Stored {
    pub request_hash: String,
    pub response_status: i64,
    pub response_body: String,
}

pub async fn stored<'e>(
    e: impl Executor<'e, Database = Any>,
    scope: &str,
    key: &str,
) -> sqlx::Result<Option<Stored>> {
    sqlx::query_as(
        "SELECT request_hash, response_status, response_body FROM idempotency_keys WHERE scope = $1 AND idem_key = $2",
    )
    .bind(scope)
    .bind(key)
    .fetch_optional(e)
    .await
}

pub async fn answer<'e>(
    e: impl Executor<'e, Database = Any>,
    scope: &str,
    key: &str,
    status: i64,
    body: &str,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE idempotency_keys SET response_status = $1, response_body = $2 WHERE scope = $3 AND idem_key = $4")
        .bind(status)
        .bind(body)
        .bind(scope)
        .bind(key)
        .execute(e)
        .await?;
    Ok(())
}
