//! The `login_throttle` table: sign-in attempts counted per key (a username
//! or an address) in a window; too many lock the key for a while.
//!
//! An attempt is reserved before its password is checked, in one statement,
//! so concurrent attempts cannot all pass a check made before any of them
//! was counted.

use sqlx::{Any, Executor};

#[derive(Clone, Copy, Debug)]
pub struct Policy {
    pub max_failures: i64,
    pub window_us: i64,
    pub lock_us: i64,
}

/// A key's lock: when it ends, and whether the attempt that asked set it
/// (so its start is told once).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lock {
    pub until: i64,
    pub started: bool,
}

/// Counts one attempt for `key` at `now` and answers whether it may go on:
/// `None` when it may, or the key's lock. The attempt past `max_failures`
/// in the window sets the lock, and leaves its `attempt` id on the row; a
/// locked key's row is left as it is (a refused attempt does not lengthen
/// the lock), and an expired lock starts a new window.
pub async fn reserve<'e>(
    e: impl Executor<'e, Database = Any>,
    key: &str,
    now: i64,
    p: Policy,
    attempt: &str,
) -> sqlx::Result<Option<Lock>> {
    let (until, locked_by): (i64, String) = sqlx::query_as(
        "INSERT INTO login_throttle (throttle_key, failures, first_failure_at, locked_until, locked_by) \
         VALUES ($1, 1, $2, CASE WHEN 1 > $3 THEN $2 + $5 ELSE 0 END, \
                 CASE WHEN 1 > $3 THEN $6 ELSE '' END) \
         ON CONFLICT (throttle_key) DO UPDATE SET \
           failures = CASE WHEN login_throttle.locked_until > $2 THEN login_throttle.failures \
                           WHEN login_throttle.locked_until > 0 \
                             OR login_throttle.first_failure_at < $2 - $4 THEN 1 \
                           ELSE login_throttle.failures + 1 END, \
           first_failure_at = CASE WHEN login_throttle.locked_until > $2 \
                                     THEN login_throttle.first_failure_at \
                                   WHEN login_throttle.locked_until > 0 \
                                     OR login_throttle.first_failure_at < $2 - $4 THEN $2 \
                                   ELSE login_throttle.first_failure_at END, \
           locked_until = CASE WHEN login_throttle.locked_until > $2 \
                                 THEN login_throttle.locked_until \
                               WHEN login_throttle.locked_until > 0 \
                                 OR login_throttle.first_failure_at < $2 - $4 THEN 0 \
                               WHEN login_throttle.failures + 1 > $3 THEN $2 + $5 \
                               ELSE 0 END, \
           locked_by = CASE WHEN login_throttle.locked_until > $2 THEN login_throttle.locked_by \
                            WHEN login_throttle.locked_until > 0 \
                              OR login_throttle.first_failure_at < $2 - $4 THEN '' \
                            WHEN login_throttle.failures + 1 > $3 THEN $6 \
                            ELSE '' END \
         RETURNING locked_until, locked_by",
    )
    .bind(key)
    .bind(now)
    .bind(p.max_failures)
    .bind(p.window_us)
    .bind(p.lock_us)
    .bind(attempt)
    .fetch_one(e)
    .await?;
    Ok((until > now).then(|| Lock {
        until,
        started: locked_by == attempt,
    }))
}

/// Gives back an attempt `reserve` counted that turned out not to be a
/// failure (a right password, or an attempt refused by the other key). A
/// lock already set stays.
pub async fn release<'e>(e: impl Executor<'e, Database = Any>, key: &str) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE login_throttle SET failures = failures - 1 \
         WHERE throttle_key = $1 AND locked_until = 0 AND failures > 0",
    )
    .bind(key)
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
