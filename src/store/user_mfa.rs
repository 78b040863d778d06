//! The `user_mfa` and `user_mfa_recovery` tables: a user's second factor
//! (a sealed TOTP secret, begun then confirmed) and their recovery codes
//! (hashes, each used once).

use sqlx::{Any, Executor};

/// A user's second factor as stored.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Row {
    pub secret: String,
    pub key_id: String,
    pub created_at: i64,
    pub confirmed_at: Option<i64>,
    pub last_step: i64,
}

pub async fn find<'e>(
    e: impl Executor<'e, Database = Any>,
    user_id: &str,
) -> sqlx::Result<Option<Row>> {
    sqlx::query_as(
        "SELECT secret, key_id, created_at, confirmed_at, last_step FROM user_mfa \
         WHERE user_id = $1",
    )
    .bind(user_id)
    .fetch_optional(e)
    .await
}

/// Begins an enrolment with a new secret, replacing one begun and not
/// confirmed; a confirmed second factor is left as it is. Rows changed.
pub async fn begin<'e>(
    e: impl Executor<'e, Database = Any>,
    user_id: &str,
    secret: &str,
    key_id: &str,
    now: i64,
) -> sqlx::Result<u64> {
    Ok(sqlx::query(
        "INSERT INTO user_mfa (user_id, secret, key_id, created_at) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (user_id) DO UPDATE SET secret = excluded.secret, key_id = excluded.key_id, \
           created_at = excluded.created_at, last_step = 0 \
         WHERE user_mfa.confirmed_at IS NULL",
    )
    .bind(user_id)
    .bind(secret)
    .bind(key_id)
    .bind(now)
    .execute(e)
    .await?
    .rows_affected())
}

/// Confirms the enrolment begun with `secret` (not another begun since),
/// taking `step` as its first code's. Rows changed.
pub async fn confirm<'e>(
    e: impl Executor<'e, Database = Any>,
    user_id: &str,
    secret: &str,
    step: i64,
    now: i64,
) -> sqlx::Result<u64> {
    Ok(sqlx::query(
        "UPDATE user_mfa SET confirmed_at = $4, last_step = $3 \
         WHERE user_id = $1 AND secret = $2 AND confirmed_at IS NULL",
    )
    .bind(user_id)
    .bind(secret)
    .bind(step)
    .bind(now)
    .execute(e)
    .await?
    .rows_affected())
}

/// Takes a code of time step `step` if no code of that step or a later one
/// was taken: a conditional write, so the same code sent twice at once is
/// taken once. Rows changed (0: a replay).
pub async fn take_step<'e>(
    e: impl Executor<'e, Database = Any>,
    user_id: &str,
    step: i64,
) -> sqlx::Result<u64> {
    Ok(sqlx::query(
        "UPDATE user_mfa SET last_step = $2 \
         WHERE user_id = $1 AND confirmed_at IS NOT NULL AND last_step < $2",
    )
    .bind(user_id)
    .bind(step)
    .execute(e)
    .await?
    .rows_affected())
}

/// Removes a user's second factor and recovery codes. Whether there was a
/// confirmed one.
pub async fn remove(conn: &mut sqlx::AnyConnection, user_id: &str) -> sqlx::Result<bool> {
    let confirmed: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM user_mfa WHERE user_id = $1 AND confirmed_at IS NOT NULL",
    )
    .bind(user_id)
    .fetch_one(&mut *conn)
    .await?;
    sqlx::query("DELETE FROM user_mfa_recovery WHERE user_id = $1")
        .bind(user_id)
        .execute(&mut *conn)
        .await?;
    sqlx::query("DELETE FROM user_mfa WHERE user_id = $1")
        .bind(user_id)
        .execute(&mut *conn)
        .await?;
    Ok(confirmed > 0)
}

/// Replaces a user's recovery codes with these hashes.
pub async fn replace_recovery(
    conn: &mut sqlx::AnyConnection,
    user_id: &str,
    hashes: &[String],
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM user_mfa_recovery WHERE user_id = $1")
        .bind(user_id)
        .execute(&mut *conn)
        .await?;
    for hash in hashes {
        sqlx::query(
            "INSERT INTO user_mfa_recovery (user_id, code_hash, created_at) VALUES ($1, $2, $3)",
        )
        .bind(user_id)
        .bind(hash)
        .bind(now)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// Uses the unused recovery code with this hash: a conditional write, so
/// a code is good once. Rows changed.
pub async fn use_recovery<'e>(
    e: impl Executor<'e, Database = Any>,
    user_id: &str,
    hash: &str,
    now: i64,
) -> sqlx::Result<u64> {
    Ok(sqlx::query(
        "UPDATE user_mfa_recovery SET used_at = $3 \
         WHERE user_id = $1 AND code_hash = $2 AND used_at IS NULL",
    )
    .bind(user_id)
    .bind(hash)
    .bind(now)
    .execute(e)
    .await?
    .rows_affected())
}

/// How many of a user's recovery codes are left unused.
pub async fn recovery_left<'e>(
    e: impl Executor<'e, Database = Any>,
    user_id: &str,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM user_mfa_recovery WHERE user_id = $1 AND used_at IS NULL",
    )
    .bind(user_id)
    .fetch_one(e)
    .await
}

/// The users with a confirmed second factor (the users page marks them).
pub async fn enrolled_ids<'e>(e: impl Executor<'e, Database = Any>) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar("SELECT user_id FROM user_mfa WHERE confirmed_at IS NOT NULL")
        .fetch_all(e)
        .await
}
