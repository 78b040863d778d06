//! The `webhook_nonces` table: replay nonces seen within a provider's
//! signature window, in the database so that a replay is refused after a
//! restart and by every instance sharing it.

use sqlx::{Any, Executor};

/// Claims `nonce` until `expires_at`: true when it was free (never seen, or
/// seen so long ago that its window has passed), false for a replay. One
/// statement, so two instances racing for one nonce cannot both win.
pub async fn claim<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    nonce: &str,
    now: i64,
    expires_at: i64,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "INSERT INTO webhook_nonces (provider, nonce, expires_at) VALUES ($1, $2, $3) \
         ON CONFLICT (provider, nonce) DO UPDATE SET expires_at = excluded.expires_at \
         WHERE webhook_nonces.expires_at <= $4",
    )
    .bind(provider)
    .bind(nonce)
    .bind(expires_at)
    .bind(now)
    .execute(e)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Forgets nonces whose window has passed.
pub async fn prune<'e>(e: impl Executor<'e, Database = Any>, now: i64) -> sqlx::Result<u64> {
    let done = sqlx::query("DELETE FROM webhook_nonces WHERE expires_at <= $1")
        .bind(now)
        .execute(e)
        .await?;
    Ok(done.rows_affected())
}
