//! The `user_sessions` table: the register of console sessions. A row is
//! written at sign-in, its `last_seen_at` moved at most about once a
//! minute, and ended (never deleted) by signing out, by a person, by a
//! change to its user, or when found dead by time.

use app::sessions::SessionRow;
use sqlx::{Any, AnyConnection, Executor};

/// How long a session lives: since it was last seen, and since it began
/// (microseconds).
#[derive(Clone, Copy, Debug)]
pub struct Lifespan {
    pub idle_us: i64,
    pub lifetime_us: i64,
}

impl Lifespan {
    /// Why a session with these times is dead at `now`, if it is.
    pub fn expired(&self, created_at: i64, last_seen_at: i64, now: i64) -> Option<&'static str> {
        if now - created_at >= self.lifetime_us {
            Some("lifetime")
        } else if now - last_seen_at >= self.idle_us {
            Some("idle")
        } else {
            None
        }
    }
}

pub struct NewSession<'a> {
    pub id: &'a str,
    pub user_id: &'a str,
    pub address: &'a str,
    pub user_agent: &'a str,
    pub now: i64,
}

pub async fn insert<'e>(
    e: impl Executor<'e, Database = Any>,
    s: &NewSession<'_>,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO user_sessions (id, user_id, created_at, last_seen_at, address, user_agent) \
         VALUES ($1, $2, $3, $3, $4, $5)",
    )
    .bind(s.id)
    .bind(s.user_id)
    .bind(s.now)
    .bind(s.address)
    .bind(s.user_agent)
    .execute(e)
    .await?;
    Ok(())
}

/// A register row as a sign-in check reads it.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Found {
    pub user_id: String,
    pub created_at: i64,
    pub last_seen_at: i64,
    pub ended_at: Option<i64>,
}

pub async fn find<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
) -> sqlx::Result<Option<Found>> {
    sqlx::query_as(
        "SELECT user_id, created_at, last_seen_at, ended_at FROM user_sessions WHERE id = $1",
    )
    .bind(id)
    .fetch_optional(e)
    .await
}

/// Moves `last_seen_at` to `now` if it is older than `stale_before` and the
/// session has not ended: a conditional write, so instances touching the
/// same session at once make one change. Rows changed.
pub async fn touch<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
    now: i64,
    stale_before: i64,
) -> sqlx::Result<u64> {
    Ok(sqlx::query(
        "UPDATE user_sessions SET last_seen_at = $2 \
         WHERE id = $1 AND ended_at IS NULL AND last_seen_at < $3",
    )
    .bind(id)
    .bind(now)
    .bind(stale_before)
    .execute(e)
    .await?
    .rows_affected())
}

/// Live at `now`: not ended, seen within the idle timeout, younger than
/// the lifetime. `$2`/`$3` are the cuts (now − idle, now − lifetime).
const LIVE: &str = "ended_at IS NULL AND last_seen_at > $2 AND created_at > $3";

/// The time a dead row's session died and why: whichever of the idle
/// timeout and the lifetime came first. `$4`/`$5` are idle and lifetime.
const DIED: &str = "ended_at = CASE WHEN last_seen_at + $4 < created_at + $5 \
                      THEN last_seen_at + $4 ELSE created_at + $5 END, \
                    end_reason = CASE WHEN last_seen_at + $4 < created_at + $5 \
                      THEN 'idle' ELSE 'lifetime' END";

/// A user's live sessions, the most recently seen first.
pub async fn live_of<'e>(
    e: impl Executor<'e, Database = Any>,
    user_id: &str,
    now: i64,
    span: Lifespan,
) -> sqlx::Result<Vec<SessionRow>> {
    sqlx::query_as(&format!(
        "SELECT id, address, user_agent, created_at, last_seen_at FROM user_sessions \
         WHERE user_id = $1 AND {LIVE} ORDER BY last_seen_at DESC, id"
    ))
    .bind(user_id)
    .bind(now - span.idle_us)
    .bind(now - span.lifetime_us)
    .fetch_all(e)
    .await
}

/// Ends one session if it is live. Rows changed.
pub async fn end_one<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
    now: i64,
    span: Lifespan,
    reason: &str,
    by: &str,
) -> sqlx::Result<u64> {
    Ok(sqlx::query(&format!(
        "UPDATE user_sessions SET ended_at = $4, end_reason = $5, ended_by = $6 \
         WHERE id = $1 AND {LIVE}"
    ))
    .bind(id)
    .bind(now - span.idle_us)
    .bind(now - span.lifetime_us)
    .bind(now)
    .bind(reason)
    .bind(by)
    .execute(e)
    .await?
    .rows_affected())
}

/// Ends every live session of a user, and closes the rows already dead by
/// time with the moment and reason they died (so no later setting can
/// bring them back). The ids of the live ones ended.
pub async fn end_all_of(
    conn: &mut AnyConnection,
    user_id: &str,
    now: i64,
    span: Lifespan,
    reason: &str,
    by: &str,
) -> sqlx::Result<Vec<String>> {
    let mut ended: Vec<String> = sqlx::query_scalar(&format!(
        "UPDATE user_sessions SET ended_at = $4, end_reason = $5, ended_by = $6 \
         WHERE user_id = $1 AND {LIVE} RETURNING id"
    ))
    .bind(user_id)
    .bind(now - span.idle_us)
    .bind(now - span.lifetime_us)
    .bind(now)
    .bind(reason)
    .bind(by)
    .fetch_all(&mut *conn)
    .await?;
    sqlx::query(&format!(
        "UPDATE user_sessions SET {DIED} WHERE user_id = $1 AND ended_at IS NULL \
           AND (last_seen_at <= $2 OR created_at <= $3)"
    ))
    .bind(user_id)
    .bind(now - span.idle_us)
    .bind(now - span.lifetime_us)
    .bind(span.idle_us)
    .bind(span.lifetime_us)
    .execute(&mut *conn)
    .await?;
    ended.sort();
    Ok(ended)
}

/// Closes one row found dead by time, with the moment and reason it died.
pub async fn close_dead<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
    now: i64,
    span: Lifespan,
) -> sqlx::Result<u64> {
    Ok(sqlx::query(&format!(
        "UPDATE user_sessions SET {DIED} WHERE id = $1 AND ended_at IS NULL \
           AND (last_seen_at <= $2 OR created_at <= $3)"
    ))
    .bind(id)
    .bind(now - span.idle_us)
    .bind(now - span.lifetime_us)
    .bind(span.idle_us)
    .bind(span.lifetime_us)
    .execute(e)
    .await?
    .rows_affected())
}
