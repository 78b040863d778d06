//! Outbox operations: the `outbox_attempts` log, the outbox
//! list and a message's page, resending a delivery (status back to
//! PENDING, attempts 0, due now; the message id kept), and the
//! `outbox_jobs` / `outbox_job_items` tables of bulk resends and recovers.

use super::Db;
use super::lists::{After, finish};
use app::outbox::{OutboxAttempt, OutboxDelivery, OutboxMessage};
use sqlx::{Any, AnyConnection, Executor, QueryBuilder};

/// Attempts kept per (message, sink): the relay's whole schedule (12) and
/// a few resends' worth; older ones are pruned as new ones come.
pub const ATTEMPTS_KEPT: i64 = 50;

/// One delivery attempt, as the relay saw it.
pub struct NewAttempt<'a> {
    pub message_id: &'a str,
    pub sink: &'a str,
    pub at: i64,
    pub status_code: Option<i64>,
    pub latency_us: i64,
    pub answer_head: &'a str,
    pub error: Option<&'a str>,
    /// RELAY, or RESEND when a person queued the delivery again.
    pub origin: &'static str,
    /// Attempts the delivery had before this one (since its last resend).
    pub before: i64,
}

/// Records a lane's attempts in multi-row statements, and prunes to
/// [`ATTEMPTS_KEPT`] the deliveries that may pass it: a resent one (its
/// count starts over, its log does not) or one past the count itself.
pub async fn record_attempts(
    conn: &mut AnyConnection,
    attempts: &[NewAttempt<'_>],
) -> sqlx::Result<()> {
    let kind = super::DbKind::of(conn);
    for chunk in attempts.chunks(100) {
        let mut qb = QueryBuilder::<Any>::new(
            "INSERT INTO outbox_attempts (attempt_id, message_id, sink, at, status_code, latency_us, answer_head, error, origin) ",
        );
        qb.push_values(chunk, |mut row, a| {
            row.push_bind(uuid::Uuid::now_v7().simple().to_string())
                .push_bind(a.message_id.to_owned())
                .push_bind(a.sink.to_owned())
                .push_bind(a.at)
                .push_bind(a.status_code)
                .push_bind(a.latency_us)
                .push_bind(a.answer_head.to_owned())
                .push_bind(a.error.map(str::to_owned))
                .push_bind(a.origin);
        });
        super::execute_built(&mut *conn, kind, qb).await?;
    }
    for a in attempts
        .iter()
        .filter(|a| a.origin == "RESEND" || a.before + 1 > ATTEMPTS_KEPT)
    {
        sqlx::query(&format!(
            "DELETE FROM outbox_attempts WHERE message_id = $1 AND sink = $2 AND attempt_id NOT IN \
               (SELECT attempt_id FROM outbox_attempts WHERE message_id = $1 AND sink = $2 \
                ORDER BY at DESC, attempt_id DESC LIMIT {ATTEMPTS_KEPT})"
        ))
        .bind(a.message_id)
        .bind(a.sink)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// What the outbox list filters by; each is optional.
#[derive(Debug, Default, Clone)]
pub struct OutboxQuery {
    pub event_type: Option<String>,
    pub sink: Option<String>,
    /// DELIVERED | PENDING | DEAD (a delivery in that status)
    pub status: Option<String>,
    /// The payment (the event's aggregate id).
    pub payment: Option<String>,
    /// Created in [from, to).
    pub from_at: Option<i64>,
    pub to_at: Option<i64>,
    pub after: Option<After>,
}

type Builder = QueryBuilder<'static, Any>;

/// ` AND …` of a filter over `outbox_events e`.
fn conditions(qb: &mut Builder, f: &OutboxQuery) {
    if let Some(v) = &f.event_type {
        qb.push(" AND e.event_type = ").push_bind(v.clone());
    }
    if let Some(v) = &f.payment {
        qb.push(" AND e.aggregate_id = ").push_bind(v.clone());
    }
    if let Some(v) = f.from_at {
        qb.push(" AND e.created_at >= ").push_bind(v);
    }
    if let Some(v) = f.to_at {
        qb.push(" AND e.created_at < ").push_bind(v);
    }
    if f.sink.is_some() || f.status.is_some() {
        qb.push(" AND EXISTS (SELECT 1 FROM outbox_deliveries d WHERE d.message_id = e.message_id");
        if let Some(v) = &f.sink {
            qb.push(" AND d.sink = ").push_bind(v.clone());
        }
        if let Some(v) = &f.status {
            qb.push(" AND d.status = ").push_bind(v.clone());
        }
        qb.push(")");
    }
}

/// A page of messages, newest first (one row past `limit` when another
/// page follows), without their deliveries.
pub async fn messages(db: &Db, f: &OutboxQuery, limit: i64) -> sqlx::Result<Vec<OutboxMessage>> {
    let mut qb = Builder::new(
        "SELECT e.message_id, e.aggregate_id AS payment_no, e.event_type, e.created_at FROM outbox_events e WHERE 1 = 1",
    );
    conditions(&mut qb, f);
    if let Some(a) = &f.after {
        qb.push(" AND (e.created_at, e.message_id) < (")
            .push_bind(a.at)
            .push(", ")
            .push_bind(a.key.clone())
            .push(")");
    }
    qb.push(format!(
        " ORDER BY e.created_at DESC, e.message_id DESC LIMIT {limit}"
    ));
    let (sql, args) = finish(&mut qb, db.kind);
    sqlx::query_as_with(&sql, args).fetch_all(&db.pool).await
}

/// A delivery, and the message it is of.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct DeliveryRow {
    pub message_id: String,
    #[sqlx(flatten)]
    pub delivery: OutboxDelivery,
}

/// The deliveries of these messages.
pub async fn deliveries(db: &Db, message_ids: &[String]) -> sqlx::Result<Vec<DeliveryRow>> {
    if message_ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut qb = Builder::new(
        "SELECT message_id, sink, status, attempts, next_attempt_at, last_error, published_at, resent_by, resent_at \
         FROM outbox_deliveries WHERE message_id IN (",
    );
    let mut ids = qb.separated(", ");
    for id in message_ids {
        ids.push_bind(id.clone());
    }
    qb.push(") ORDER BY message_id, sink");
    let (sql, args) = finish(&mut qb, db.kind);
    sqlx::query_as_with(&sql, args).fetch_all(&db.pool).await
}

/// A message's attempts, oldest first.
pub async fn attempts<'e>(
    e: impl Executor<'e, Database = Any>,
    message_id: &str,
) -> sqlx::Result<Vec<OutboxAttempt>> {
    sqlx::query_as(
        "SELECT sink, at, status_code, latency_us, answer_head, error, origin FROM outbox_attempts \
         WHERE message_id = $1 ORDER BY at, attempt_id",
    )
    .bind(message_id)
    .fetch_all(e)
    .await
}

/// A delivery's status, or `None` when the message was never meant for
/// that sink.
pub async fn delivery_status<'e>(
    e: impl Executor<'e, Database = Any>,
    message_id: &str,
    sink: &str,
) -> sqlx::Result<Option<(String, i64)>> {
    sqlx::query_as(
        "SELECT status, attempts FROM outbox_deliveries WHERE message_id = $1 AND sink = $2",
    )
    .bind(message_id)
    .bind(sink)
    .fetch_optional(e)
    .await
}

/// Queues a delivery again: PENDING, attempts 0, due `now`, unleased —
/// unless it is PENDING already (the relay has it, or will). True when it
/// was queued.
pub async fn requeue(
    conn: &mut AnyConnection,
    message_id: &str,
    sink: &str,
    actor: &str,
    now: i64,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE outbox_deliveries SET status = 'PENDING', attempts = 0, next_attempt_at = $1, lease_until = NULL, \
           resent_by = $2, resent_at = $1 WHERE message_id = $3 AND sink = $4 AND status <> 'PENDING'",
    )
    .bind(now)
    .bind(actor)
    .bind(message_id)
    .bind(sink)
    .execute(&mut *conn)
    .await?
    .rows_affected();
    Ok(done == 1)
}

/// The not-pending deliveries the list's filter matches (only the filter's
/// sink and status when it names them), oldest message first.
pub async fn resendable(db: &Db, f: &OutboxQuery) -> sqlx::Result<Vec<(String, String)>> {
    let mut qb = Builder::new(
        "SELECT e.message_id, dd.sink FROM outbox_events e \
         JOIN outbox_deliveries dd ON dd.message_id = e.message_id WHERE dd.status <> 'PENDING'",
    );
    conditions(&mut qb, f);
    if let Some(v) = &f.sink {
        qb.push(" AND dd.sink = ").push_bind(v.clone());
    }
    if let Some(v) = &f.status {
        qb.push(" AND dd.status = ").push_bind(v.clone());
    }
    qb.push(" ORDER BY e.created_at, e.message_id, dd.sink");
    let (sql, args) = finish(&mut qb, db.kind);
    sqlx::query_as_with(&sql, args).fetch_all(&db.pool).await
}

/// A sink's DEAD deliveries whose last attempt (or, with none logged, the
/// message) is at or after `since`.
pub async fn dead_since<'e>(
    e: impl Executor<'e, Database = Any>,
    sink: &str,
    since: i64,
) -> sqlx::Result<Vec<(String, String)>> {
    sqlx::query_as(
        "SELECT d.message_id, d.sink FROM outbox_deliveries d JOIN outbox_events e ON e.message_id = d.message_id \
         WHERE d.sink = $1 AND d.status = 'DEAD' \
           AND COALESCE((SELECT MAX(a.at) FROM outbox_attempts a WHERE a.message_id = d.message_id AND a.sink = d.sink), \
                        e.created_at) >= $2 \
         ORDER BY e.created_at, d.message_id",
    )
    .bind(sink)
    .bind(since)
    .fetch_all(e)
    .await
}

/// The sinks any delivery names (configured or not any more).
pub async fn known_sinks<'e>(e: impl Executor<'e, Database = Any>) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar("SELECT DISTINCT sink FROM outbox_deliveries ORDER BY sink")
        .fetch_all(e)
        .await
}

// ---- jobs -----------------------------------------------------------

pub struct NewJob<'a> {
    pub job_id: &'a str,
    pub kind: &'a str,
    pub params_json: &'a str,
    pub requested_by: &'a str,
    pub now: i64,
}

/// The job and its items (the deliveries it will queue), in one go.
pub async fn insert_job(
    conn: &mut AnyConnection,
    j: &NewJob<'_>,
    items: &[(String, String)],
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO outbox_jobs (job_id, kind, params_json, requested_by, status, total, started_at, updated_at) \
         VALUES ($1, $2, $3, $4, 'RUNNING', $5, $6, $6)",
    )
    .bind(j.job_id)
    .bind(j.kind)
    .bind(j.params_json)
    .bind(j.requested_by)
    .bind(items.len() as i64)
    .bind(j.now)
    .execute(&mut *conn)
    .await?;
    let numbered: Vec<(i64, &(String, String))> = (0..).zip(items).collect();
    super::batch::insert_rows(
        conn,
        "INSERT INTO outbox_job_items (job_id, seq, message_id, sink, status)",
        ", 'PENDING'",
        &numbered,
        |(seq, (message_id, sink))| {
            [
                j.job_id.into(),
                (*seq).into(),
                message_id.as_str().into(),
                sink.as_str().into(),
            ]
        },
    )
    .await
}

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct JobRow {
    pub job_id: String,
    pub kind: String,
    pub params_json: String,
    pub requested_by: String,
    pub status: String,
    pub total: i64,
    pub done: i64,
    pub skipped: i64,
    pub error: Option<String>,
    pub started_at: i64,
    pub updated_at: i64,
    pub finished_at: Option<i64>,
}

pub async fn job<'e>(
    e: impl Executor<'e, Database = Any>,
    job_id: &str,
) -> sqlx::Result<Option<JobRow>> {
    sqlx::query_as(
        "SELECT job_id, kind, params_json, requested_by, status, total, done, skipped, error, started_at, updated_at, \
           finished_at FROM outbox_jobs WHERE job_id = $1",
    )
    .bind(job_id)
    .fetch_optional(e)
    .await
}

/// The 20 most recent jobs.
pub async fn recent_jobs<'e>(e: impl Executor<'e, Database = Any>) -> sqlx::Result<Vec<JobRow>> {
    sqlx::query_as(
        "SELECT job_id, kind, params_json, requested_by, status, total, done, skipped, error, started_at, updated_at, \
           finished_at FROM outbox_jobs ORDER BY started_at DESC LIMIT 20",
    )
    .fetch_all(e)
    .await
}

/// RUNNING → CANCELLING; false when the job was not running.
pub async fn request_cancel<'e>(
    e: impl Executor<'e, Database = Any>,
    job_id: &str,
    now: i64,
) -> sqlx::Result<bool> {
    let n = sqlx::query(
        "UPDATE outbox_jobs SET status = 'CANCELLING', updated_at = $1 WHERE job_id = $2 AND status = 'RUNNING'",
    )
    .bind(now)
    .bind(job_id)
    .execute(e)
    .await?
    .rows_affected();
    Ok(n == 1)
}

pub async fn next_items<'e>(
    e: impl Executor<'e, Database = Any>,
    job_id: &str,
    limit: i64,
) -> sqlx::Result<Vec<(i64, String, String)>> {
    sqlx::query_as(&format!(
        "SELECT seq, message_id, sink FROM outbox_job_items WHERE job_id = $1 AND status = 'PENDING' \
         ORDER BY seq LIMIT {limit}"
    ))
    .bind(job_id)
    .fetch_all(e)
    .await
}

/// An item worked: DONE (queued again) or SKIPPED (already pending),
/// counted with the item's own row so a retried transaction counts once.
/// Takes a job's item for this transaction before its delivery is
/// queued: false when another runner of the job (a second instance that
/// resumed it too) worked it already. PostgreSQL's row lock makes the
/// second claim wait for the first's commit and then find it taken.
pub async fn claim_item(conn: &mut AnyConnection, job_id: &str, seq: i64) -> sqlx::Result<bool> {
    let n = sqlx::query(
        "UPDATE outbox_job_items SET status = 'CLAIMED' WHERE job_id = $1 AND seq = $2 AND status = 'PENDING'",
    )
    .bind(job_id)
    .bind(seq)
    .execute(&mut *conn)
    .await?
    .rows_affected();
    Ok(n == 1)
}

/// A claimed item's outcome, counted on its job (same transaction as the
/// claim: CLAIMED is never seen outside it).
pub async fn item_worked(
    conn: &mut AnyConnection,
    job_id: &str,
    seq: i64,
    queued: bool,
    now: i64,
) -> sqlx::Result<()> {
    let status = if queued { "DONE" } else { "SKIPPED" };
    let n = sqlx::query(
        "UPDATE outbox_job_items SET status = $1 WHERE job_id = $2 AND seq = $3 AND status = 'CLAIMED'",
    )
    .bind(status)
    .bind(job_id)
    .bind(seq)
    .execute(&mut *conn)
    .await?
    .rows_affected();
    if n == 1 {
        let column = if queued { "done" } else { "skipped" };
        sqlx::query(&format!(
            "UPDATE outbox_jobs SET {column} = {column} + 1, updated_at = $1 WHERE job_id = $2"
        ))
        .bind(now)
        .bind(job_id)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// The job's status now (a cancel is seen between chunks).
pub async fn job_status<'e>(
    e: impl Executor<'e, Database = Any>,
    job_id: &str,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar("SELECT status FROM outbox_jobs WHERE job_id = $1")
        .bind(job_id)
        .fetch_optional(e)
        .await
}

/// RUNNING → DONE, CANCELLING → CANCELLED.
pub async fn finish_job<'e>(
    e: impl Executor<'e, Database = Any>,
    job_id: &str,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE outbox_jobs SET status = CASE WHEN status = 'CANCELLING' THEN 'CANCELLED' ELSE 'DONE' END, \
           finished_at = $1, updated_at = $1 WHERE job_id = $2 AND status IN ('RUNNING', 'CANCELLING')",
    )
    .bind(now)
    .bind(job_id)
    .execute(e)
    .await?;
    Ok(())
}

pub async fn fail_job<'e>(
    e: impl Executor<'e, Database = Any>,
    job_id: &str,
    error: &str,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE outbox_jobs SET status = 'FAILED', error = $1, finished_at = $2, updated_at = $2 \
         WHERE job_id = $3 AND status IN ('RUNNING', 'CANCELLING')",
    )
    .bind(error)
    .bind(now)
    .bind(job_id)
    .execute(e)
    .await?;
    Ok(())
}

/// Jobs left RUNNING or CANCELLING and silent since `before`.
pub async fn unfinished<'e>(
    e: impl Executor<'e, Database = Any>,
    before: i64,
) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar(
        "SELECT job_id FROM outbox_jobs WHERE status IN ('RUNNING', 'CANCELLING') AND updated_at < $1 ORDER BY started_at",
    )
    .bind(before)
    .fetch_all(e)
    .await
}

/// A bumped `updated_at`, so a long chunk is not taken for a stopped job.
pub async fn touch_job<'e>(
    e: impl Executor<'e, Database = Any>,
    job_id: &str,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE outbox_jobs SET updated_at = $1 WHERE job_id = $2")
        .bind(now)
        .bind(job_id)
        .execute(e)
        .await?;
    Ok(())
}
