//! The `outbox_events` and `outbox_deliveries` tables: messages written in
//! the same transaction as the change they announce, delivered later.

use crate::store::batch::{Statements, insert_rows};
use sqlx::{Any, Executor};

pub struct NewEvent<'a> {
    pub message_id: &'a str,
    pub aggregate_type: &'a str,
    pub aggregate_id: &'a str,
    pub event_type: &'a str,
    pub payload: &'a str,
    pub now: i64,
}

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct DueDelivery {
    pub message_id: String,
    pub sink: String,
    pub attempts: i64,
    /// The lease this pass holds: its outcome is written only while the
    /// row still carries it (not after a resend, nor another instance's
    /// lease once this one ran out).
    pub lease_until: i64,
}

/// Due deliveries leased; a paused sink's wait (issue 28: no attempt spent).
pub async fn lease_due<'e>(
    e: impl Executor<'e, Database = Any>,
    now: i64,
    lease_until: i64,
    limit: i64,
    skip_locked: &str,
) -> sqlx::Result<Vec<DueDelivery>> {
    let sql = format!(
        "UPDATE outbox_deliveries SET lease_until = $1 \
         WHERE (message_id, sink) IN (SELECT message_id, sink FROM outbox_deliveries \
             WHERE status = 'PENDING' AND next_attempt_at <= $2 AND (lease_until IS NULL OR lease_until <= $2) \
               AND NOT EXISTS (SELECT 1 FROM outbox_events ev JOIN payment_holds h ON h.payment_no = ev.aggregate_id \
                 WHERE ev.message_id = outbox_deliveries.message_id) \
               AND NOT EXISTS (SELECT 1 FROM sink_state ss WHERE ss.sink = outbox_deliveries.sink AND ss.paused_at IS NOT NULL) \
             ORDER BY next_attempt_at LIMIT $3{skip_locked}) \
         RETURNING message_id, sink, attempts, lease_until"
    );
    sqlx::query_as(&sql)
        .bind(lease_until)
        .bind(now)
        .bind(limit)
        .fetch_all(e)
        .await
}

/// True when a delivery is due, unleased, not held and its sink not
/// paused: a read, so the relay with nothing to send never waits for
/// SQLite's write lock.
pub async fn any_due<'e>(e: impl Executor<'e, Database = Any>, now: i64) -> sqlx::Result<bool> {
    let found: Option<i64> = sqlx::query_scalar(
        "SELECT 1 FROM outbox_deliveries \
         WHERE status = 'PENDING' AND next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until <= $1) \
           AND NOT EXISTS (SELECT 1 FROM outbox_events ev JOIN payment_holds h ON h.payment_no = ev.aggregate_id \
             WHERE ev.message_id = outbox_deliveries.message_id) \
           AND NOT EXISTS (SELECT 1 FROM sink_state ss WHERE ss.sink = outbox_deliveries.sink AND ss.paused_at IS NOT NULL) \
         LIMIT 1",
    )
    .bind(now)
    .fetch_optional(e)
    .await?;
    Ok(found.is_some())
}

#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize, utoipa::ToSchema)]
pub struct EventRow {
    pub message_id: String,
    pub aggregate_id: String,
    pub event_type: String,
    pub payload: String,
    pub created_at: i64,
}

pub async fn event<'e>(
    e: impl Executor<'e, Database = Any>,
    message_id: &str,
) -> sqlx::Result<Option<EventRow>> {
    sqlx::query_as(
        "SELECT message_id, aggregate_id, event_type, payload, created_at FROM outbox_events WHERE message_id = $1",
    )
    .bind(message_id)
    .fetch_optional(e)
    .await
}

pub async fn events_of<'e>(
    e: impl Executor<'e, Database = Any>,
    aggregate_id: &str,
) -> sqlx::Result<Vec<EventRow>> {
    sqlx::query_as(
        "SELECT message_id, aggregate_id, event_type, payload, created_at FROM outbox_events \
         WHERE aggregate_id = $1 ORDER BY created_at, message_id",
    )
    .bind(aggregate_id)
    .fetch_all(e)
    .await
}

/// A delivered attempt, written only under the pass's own lease; false
/// when the row has moved on meanwhile.
pub async fn delivered<'e>(
    e: impl Executor<'e, Database = Any>,
    d: &DueDelivery,
    now: i64,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE outbox_deliveries SET status = 'DELIVERED', attempts = attempts + 1, published_at = $1, \
           lease_until = NULL, last_error = NULL WHERE message_id = $2 AND sink = $3 AND lease_until = $4",
    )
    .bind(now)
    .bind(&d.message_id)
    .bind(&d.sink)
    .bind(d.lease_until)
    .execute(e)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// A failed attempt: retried at `next_at`, or dead-lettered when `None`;
/// written only under the pass's own lease (false when the row has moved
/// on: a resend's fresh start is never undone by a late failure).
pub async fn attempt_failed<'e>(
    e: impl Executor<'e, Database = Any>,
    d: &DueDelivery,
    error: &str,
    next_at: Option<i64>,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE outbox_deliveries SET status = $1, attempts = attempts + 1, next_attempt_at = COALESCE($2, next_attempt_at), \
           lease_until = NULL, last_error = $3 WHERE message_id = $4 AND sink = $5 AND lease_until = $6",
    )
    .bind(if next_at.is_some() { "PENDING" } else { "DEAD" })
    .bind(next_at)
    .bind(error)
    .bind(&d.message_id)
    .bind(&d.sink)
    .bind(d.lease_until)
    .execute(e)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Age of the oldest undelivered message, for the lag gauge.
pub async fn oldest_pending<'e>(e: impl Executor<'e, Database = Any>) -> sqlx::Result<Option<i64>> {
    sqlx::query_scalar(
        "SELECT MIN(ev.created_at) FROM outbox_deliveries d JOIN outbox_events ev ON ev.message_id = d.message_id \
         WHERE d.status = 'PENDING'",
    )
    .fetch_one(e)
    .await
}

/// Many events, each with a delivery row per sink that wants its event
/// type, by multi-row statements.
pub async fn insert_events_many(
    conn: &mut impl Statements,
    events: &[NewEvent<'_>],
    sinks: &[super::sinks::Route],
) -> sqlx::Result<()> {
    insert_rows(
        &mut *conn,
        "INSERT INTO outbox_events (message_id, aggregate_type, aggregate_id, event_type, payload, available_at, created_at)",
        "",
        events,
        |ev| {
            [
                ev.message_id.into(),
                ev.aggregate_type.into(),
                ev.aggregate_id.into(),
                ev.event_type.into(),
                ev.payload.into(),
                ev.now.into(),
                ev.now.into(),
            ]
        },
    )
    .await?;
    for sink in sinks {
        let wanted: Vec<&NewEvent> = events
            .iter()
            .filter(|ev| sink.wants(ev.event_type))
            .collect();
        insert_rows(
            &mut *conn,
            "INSERT INTO outbox_deliveries (message_id, sink, next_attempt_at, status, attempts)",
            ", 'PENDING', 0",
            &wanted,
            |ev| {
                [
                    ev.message_id.into(),
                    sink.name.as_str().into(),
                    ev.now.into(),
                ]
            },
        )
        .await?;
    }
    Ok(())
}

// ---- The console (issue 25, r25-triage) -------------------------------------

/// A payment's outbox message with one of its deliveries (none when no
/// sink is configured).
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct EventDelivery {
    pub message_id: String,
    pub event_type: String,
    pub created_at: i64,
    pub sink: Option<String>,
    pub status: Option<String>,
    pub attempts: Option<i64>,
    pub last_error: Option<String>,
    pub published_at: Option<i64>,
}

pub async fn deliveries_of<'e>(
    e: impl Executor<'e, Database = Any>,
    aggregate_id: &str,
) -> sqlx::Result<Vec<EventDelivery>> {
    sqlx::query_as(
        "SELECT e.message_id, e.event_type, e.created_at, d.sink, d.status, d.attempts, d.last_error, d.published_at \
         FROM outbox_events e LEFT JOIN outbox_deliveries d ON d.message_id = e.message_id \
         WHERE e.aggregate_id = $1 ORDER BY e.created_at",
    )
    .bind(aggregate_id)
    .fetch_all(e)
    .await
}
// ---- end of the console (r25-triage) ----------------------------------------
