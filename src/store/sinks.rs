//! The `sink_state` table — each outbox sink's pause and its run of
//! failures, shared by every instance on the database — and the counts of
//! a sink's deliveries for the sinks page. A sink's row is made by its
//! first pause or attempt.

use sqlx::{Any, Executor};

/// Where a new outbox message goes: a sink's name and the event types it
/// wants (exact, or a prefix as `payment.*`; none: every type).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    pub name: String,
    pub event_types: Vec<String>,
}

impl Route {
    pub fn wants(&self, event_type: &str) -> bool {
        self.event_types.is_empty()
            || self.event_types.iter().any(|t| {
                t == "*"
                    || t == event_type
                    || t.strip_suffix('*')
                        .is_some_and(|prefix| event_type.starts_with(prefix))
            })
    }
}

/// A sink's stored state (all None/0 for a sink never paused or tried).
#[derive(Clone, Debug, Default, sqlx::FromRow)]
pub struct State {
    pub sink: String,
    pub paused_at: Option<i64>,
    pub paused_by: Option<String>,
    pub pause_reason: Option<String>,
    pub consecutive_failures: i64,
    pub failing_since: Option<i64>,
    pub failing_alerted_at: Option<i64>,
    pub last_success_at: Option<i64>,
    pub last_failure_at: Option<i64>,
    pub last_error: Option<String>,
}

pub async fn states<'e>(e: impl Executor<'e, Database = Any>) -> sqlx::Result<Vec<State>> {
    sqlx::query_as(
        "SELECT sink, paused_at, paused_by, pause_reason, consecutive_failures, failing_since, \
           failing_alerted_at, last_success_at, last_failure_at, last_error FROM sink_state",
    )
    .fetch_all(e)
    .await
}

/// Pauses (`Some(reason)`) or resumes (`None`) a sink; returns whether it
/// changed (pausing a paused sink, or resuming an active one, does not).
pub async fn set_paused(
    conn: &mut sqlx::AnyConnection,
    sink: &str,
    pause: Option<(&str, &str)>,
    now: i64,
) -> sqlx::Result<bool> {
    sqlx::query("INSERT INTO sink_state (sink) VALUES ($1) ON CONFLICT (sink) DO NOTHING")
        .bind(sink)
        .execute(&mut *conn)
        .await?;
    let done = match pause {
        Some((by, reason)) => {
            sqlx::query(
                "UPDATE sink_state SET paused_at = $1, paused_by = $2, pause_reason = $3 \
                 WHERE sink = $4 AND paused_at IS NULL",
            )
            .bind(now)
            .bind(by)
            .bind(reason)
            .bind(sink)
            .execute(&mut *conn)
            .await?
        }
        None => {
            sqlx::query(
                "UPDATE sink_state SET paused_at = NULL, paused_by = NULL, pause_reason = NULL \
                 WHERE sink = $1 AND paused_at IS NOT NULL",
            )
            .bind(sink)
            .execute(&mut *conn)
            .await?
        }
    };
    Ok(done.rows_affected() == 1)
}

/// Whether the sink is paused now (no row: never paused).
pub async fn is_paused(conn: &mut sqlx::AnyConnection, sink: &str) -> sqlx::Result<bool> {
    let paused: Option<Option<i64>> =
        sqlx::query_scalar("SELECT paused_at FROM sink_state WHERE sink = $1")
            .bind(sink)
            .fetch_optional(&mut *conn)
            .await?;
    Ok(matches!(paused, Some(Some(_))))
}

/// The sink's pending deliveries that wait for a later retry, due at
/// `now`; returns how many. A delivery in flight keeps its lease: its
/// outcome decides its next step, as for any other.
pub async fn retry_now(conn: &mut sqlx::AnyConnection, sink: &str, now: i64) -> sqlx::Result<u64> {
    let done = sqlx::query(
        "UPDATE outbox_deliveries SET next_attempt_at = $1 \
         WHERE sink = $2 AND status = 'PENDING' AND next_attempt_at > $1",
    )
    .bind(now)
    .bind(sink)
    .execute(&mut *conn)
    .await?;
    Ok(done.rows_affected())
}

/// A delivery reached the sink: its failing spell, if any, is over.
pub async fn succeeded<'e>(
    e: impl Executor<'e, Database = Any>,
    sink: &str,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO sink_state (sink, last_success_at) VALUES ($1, $2) \
         ON CONFLICT (sink) DO UPDATE SET last_success_at = $2, consecutive_failures = 0, \
           failing_since = NULL, failing_alerted_at = NULL",
    )
    .bind(sink)
    .bind(now)
    .execute(e)
    .await?;
    Ok(())
}

/// `count` failed attempts counted: the failures in a row and when the
/// spell began, after these.
pub async fn failed<'e>(
    e: impl Executor<'e, Database = Any>,
    sink: &str,
    error: &str,
    count: i64,
    now: i64,
) -> sqlx::Result<(i64, i64)> {
    sqlx::query_as(
        "INSERT INTO sink_state (sink, consecutive_failures, failing_since, last_failure_at, last_error) \
           VALUES ($1, $4, $2, $2, $3) \
         ON CONFLICT (sink) DO UPDATE SET consecutive_failures = sink_state.consecutive_failures + $4, \
           failing_since = COALESCE(sink_state.failing_since, $2), last_failure_at = $2, last_error = $3 \
         RETURNING consecutive_failures, failing_since",
    )
    .bind(sink)
    .bind(now)
    .bind(error)
    .bind(count)
    .fetch_one(e)
    .await
}

/// Marks the spell alerted; true for the one caller that marked it (two
/// instances failing at once raise one alert).
pub async fn mark_failing<'e>(
    e: impl Executor<'e, Database = Any>,
    sink: &str,
    now: i64,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE sink_state SET failing_alerted_at = $1 WHERE sink = $2 AND failing_alerted_at IS NULL \
           AND failing_since IS NOT NULL",
    )
    .bind(now)
    .bind(sink)
    .execute(e)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// A sink's deliveries by state: waiting for their first attempt,
/// retrying after a failure, dead-lettered.
#[derive(Clone, Debug, Default, sqlx::FromRow)]
pub struct Counts {
    pub sink: String,
    pub pending: i64,
    pub retrying: i64,
    pub dead: i64,
}

pub async fn counts<'e>(e: impl Executor<'e, Database = Any>) -> sqlx::Result<Vec<Counts>> {
    sqlx::query_as(
        "SELECT sink, \
           SUM(CASE WHEN status = 'PENDING' AND attempts = 0 THEN 1 ELSE 0 END) AS pending, \
           SUM(CASE WHEN status = 'PENDING' AND attempts > 0 THEN 1 ELSE 0 END) AS retrying, \
           SUM(CASE WHEN status = 'DEAD' THEN 1 ELSE 0 END) AS dead \
         FROM outbox_deliveries WHERE status IN ('PENDING', 'DEAD') GROUP BY sink",
    )
    .fetch_all(e)
    .await
}
