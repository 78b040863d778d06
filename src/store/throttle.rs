//! The `login_throttle` table: failed sign-ins counted per key (a username
//! or an address) in a window; too many lock the key for a while.

use sqlx::{Any, Executor};

#[derive(Clone, Copy, Debug)]
pub struct Policy {
    pub max_failures: i64,
    pub window_us: i64,
    pub lock_us: i64,
}

/// When the key is locked at `now`, the time the lock ends.
pub async fn locked_until<'e>(
    e: impl Executor<'e, Database = Any>,
    key: &str,
    now: i64,
) -> sqlx::Result<Option<i64>> {
    let until: Option<i64> =
        sqlx::query_scalar("SELECT locked_until FROM login_throttle WHERE throttle_key = $1")
            .bind(key)
            .fetch_optional(e)
            .await?;
    Ok(until.filter(|u| *u > now))
}

/// Counts one failure in one statement; the count restarts when the window
/// has passed, and reaching the limit sets the lock.
pub async fn record_failure<'e>(
    e: impl Executor<'e, Database = Any>,
    key: &str,
    now: i64,
    p: Policy,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO login_throttle (throttle_key, failures, first_failure_at, locked_until) \
         VALUES ($1, 1, $2, CASE WHEN 1 >= $3 THEN $2 + $5 ELSE 0 END) \
         ON CONFLICT (throttle_key) DO UPDATE SET \
           failures = CASE WHEN login_throttle.first_failure_at < $2 - $4 THEN 1 \
                           ELSE login_throttle.failures + 1 END, \
           first_failure_at = CASE WHEN login_throttle.first_failure_at < $2 - $4 THEN $2 \
                                   ELSE login_throttle.first_failure_at END, \
           locked_until = CASE WHEN (CASE WHEN login_throttle.first_failure_at < $2 - $4 THEN 1 \
                                          ELSE login_throttle.failures + 1 END) >= $3 THEN $2 + $5 \
                               ELSE login_throttle.locked_until END",
    )
    .bind(key)
    .bind(now)
    .bind(p.max_failures)
    .bind(p.window_us)
    .bind(p.lock_us)
    .execute(e)
    .await?;
    Ok(())
}

pub async fn clear<'e>(e: impl Executor<'e, Database = Any>, key: &str) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM login_throttle WHERE throttle_key = $1")
        .bind(key)
        .execute(e)
        .await?;
    Ok(())
}
