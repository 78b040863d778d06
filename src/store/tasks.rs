//! The `provider_tasks` table: calls to make to a provider outside any
//! transaction (create a payment, query its status), leased by workers.

use sqlx::{Any, Executor};

pub const CREATE: &str = "create";
pub const QUERY: &str = "query";
/// Ask the provider to refund.
pub const REFUND: &str = "refund";
/// Ask the provider how a refund went.
pub const REFUND_QUERY: &str = "refund_query";
/// Repair a payment a reconciliation found STATUS_LAG (its stored callback
/// replayed, else a status query), recorded on its ticket.
pub const RECON_REPAIR: &str = "recon_repair";

pub async fn schedule<'e>(
    e: impl Executor<'e, Database = Any>,
    kind: &str,
    payment_no: &str,
    run_at: i64,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO provider_tasks (task_id, kind, payment_no, status, attempts, next_run_at, created_at, updated_at) \
         VALUES ($1, $2, $3, 'PENDING', 0, $4, $5, $5)",
    )
    .bind(uuid::Uuid::now_v7().to_string())
    .bind(kind)
    .bind(payment_no)
    .bind(run_at)
    .bind(now)
    .execute(e)
    .await?;
    Ok(())
}

/// One task of `kind` per payment, due at `run_at`, in the caller's
/// transaction.
pub async fn schedule_many(
    conn: &mut sqlx::AnyConnection,
    kind: &str,
    payment_nos: &[&str],
    run_at: i64,
    now: i64,
) -> sqlx::Result<()> {
    let tasks: Vec<(String, &str)> = payment_nos
        .iter()
        .map(|&no| (uuid::Uuid::now_v7().to_string(), no))
        .collect();
    super::batch::insert_rows(
        conn,
        "INSERT INTO provider_tasks (task_id, kind, payment_no, next_run_at, created_at, updated_at, status, attempts)",
        ", 'PENDING', 0",
        &tasks,
        |(id, no)| {
            [
                id.as_str().into(),
                kind.into(),
                (*no).into(),
                run_at.into(),
                now.into(),
                now.into(),
            ]
        },
    )
    .await
}

/// A refund task: `refund_no` names the refund.
pub async fn schedule_refund<'e>(
    e: impl Executor<'e, Database = Any>,
    kind: &str,
    payment_no: &str,
    refund_no: &str,
    run_at: i64,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO provider_tasks (task_id, kind, payment_no, refund_no, status, attempts, next_run_at, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, 'PENDING', 0, $5, $6, $6)",
    )
    .bind(uuid::Uuid::now_v7().to_string())
    .bind(kind)
    .bind(payment_no)
    .bind(refund_no)
    .bind(run_at)
    .bind(now)
    .execute(e)
    .await?;
    Ok(())
}

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct TaskRow {
    pub task_id: String,
    pub kind: String,
    pub payment_no: String,
    pub refund_no: Option<String>,
    pub attempts: i64,
}

/// The columns of a [`TaskRow`].
const TASK_COLUMNS: &str = "task_id, kind, payment_no, refund_no, attempts";

/// Leases up to `limit` due tasks of one kind at once (reconciliation
/// repairs, which share their lookups and their tickets' commit).
pub async fn lease_due<'e>(
    e: impl Executor<'e, Database = Any>,
    kind: &str,
    now: i64,
    lease_until: i64,
    limit: i64,
    skip_locked: &str,
) -> sqlx::Result<Vec<TaskRow>> {
    let sql = format!(
        "UPDATE provider_tasks SET lease_until = $1 \
         WHERE task_id IN (SELECT task_id FROM provider_tasks \
             WHERE status = 'PENDING' AND kind = $2 AND next_run_at <= $3 AND (lease_until IS NULL OR lease_until <= $3) \
             ORDER BY next_run_at LIMIT $4{skip_locked}) \
         RETURNING {TASK_COLUMNS}"
    );
    sqlx::query_as(&sql)
        .bind(lease_until)
        .bind(kind)
        .bind(now)
        .bind(limit)
        .fetch_all(e)
        .await
}

/// True when a task of `kind` is due and unleased: a read, so a lane with
/// nothing to do never waits for SQLite's write lock behind the intake.
pub async fn any_due<'e>(
    e: impl Executor<'e, Database = Any>,
    kind: &str,
    now: i64,
) -> sqlx::Result<bool> {
    let found: Option<i64> = sqlx::query_scalar(
        "SELECT 1 FROM provider_tasks WHERE status = 'PENDING' AND kind = $1 AND next_run_at <= $2 \
           AND (lease_until IS NULL OR lease_until <= $2) LIMIT 1",
    )
    .bind(kind)
    .bind(now)
    .fetch_optional(e)
    .await?;
    Ok(found.is_some())
}

/// A due provider call, not leased yet, with the provider account it goes
/// to (`None` when its payment is gone).
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct DueCall {
    pub task_id: String,
    pub payment_no: String,
    pub provider: Option<String>,
}

/// Up to `limit` due, unleased provider calls (every kind but repairs),
/// oldest first, leaving out the accounts in `skip` (their calls are all
/// busy, so the rest are not starved behind them). Only reads: each is
/// leased by [`lease_call`] as its call starts.
pub async fn due_calls<'e>(
    e: impl Executor<'e, Database = Any>,
    now: i64,
    limit: i64,
    skip: &[&str],
) -> sqlx::Result<Vec<DueCall>> {
    let skip_sql = if skip.is_empty() {
        String::new()
    } else {
        let list: Vec<String> = (0..skip.len()).map(|i| format!("${}", i + 4)).collect();
        format!(
            " AND (p.provider IS NULL OR p.provider NOT IN ({}))",
            list.join(", ")
        )
    };
    let sql = format!(
        "SELECT t.task_id, t.payment_no, p.provider FROM provider_tasks t \
         LEFT JOIN payments p ON p.payment_no = t.payment_no \
         WHERE t.status = 'PENDING' AND t.kind <> $1 AND t.next_run_at <= $2 \
           AND (t.lease_until IS NULL OR t.lease_until <= $2){skip_sql} \
         ORDER BY t.next_run_at LIMIT $3"
    );
    let mut q = sqlx::query_as(&sql)
        .bind(RECON_REPAIR)
        .bind(now)
        .bind(limit);
    for name in skip {
        q = q.bind(*name);
    }
    q.fetch_all(e).await
}

/// Leases one due task until `lease_until`, unless another worker (or
/// instance) took it first; the task as it is now, if leased.
pub async fn lease_call<'e>(
    e: impl Executor<'e, Database = Any>,
    task_id: &str,
    now: i64,
    lease_until: i64,
    skip_locked: &str,
) -> sqlx::Result<Option<TaskRow>> {
    let sql = format!(
        "UPDATE provider_tasks SET lease_until = $1 \
         WHERE task_id IN (SELECT task_id FROM provider_tasks \
             WHERE task_id = $2 AND status = 'PENDING' AND next_run_at <= $3 \
               AND (lease_until IS NULL OR lease_until <= $3){skip_locked}) \
         RETURNING {TASK_COLUMNS}"
    );
    sqlx::query_as(&sql)
        .bind(lease_until)
        .bind(task_id)
        .bind(now)
        .fetch_optional(e)
        .await
}

/// Keeps a running call's lease from lapsing (a call that outlives it
/// would otherwise be taken and made twice).
pub async fn extend_lease<'e>(
    e: impl Executor<'e, Database = Any>,
    task_id: &str,
    lease_until: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE provider_tasks SET lease_until = $1 \
         WHERE task_id = $2 AND status = 'PENDING' AND lease_until IS NOT NULL",
    )
    .bind(lease_until)
    .bind(task_id)
    .execute(e)
    .await?;
    Ok(())
}

/// Finished (`DONE`) or given up (`EXHAUSTED`).
pub async fn close<'e>(
    e: impl Executor<'e, Database = Any>,
    task_id: &str,
    status: &str,
    error: Option<&str>,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE provider_tasks SET status = $1, attempts = attempts + 1, lease_until = NULL, last_error = $2, \
           updated_at = $3 WHERE task_id = $4",
    )
    .bind(status)
    .bind(error)
    .bind(now)
    .bind(task_id)
    .execute(e)
    .await?;
    Ok(())
}

pub async fn retry_at<'e>(
    e: impl Executor<'e, Database = Any>,
    task_id: &str,
    next_run_at: i64,
    error: Option<&str>,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE provider_tasks SET attempts = attempts + 1, next_run_at = $1, lease_until = NULL, last_error = $2, \
           updated_at = $3 WHERE task_id = $4",
    )
    .bind(next_run_at)
    .bind(error)
    .bind(now)
    .bind(task_id)
    .execute(e)
    .await?;
    Ok(())
}

/// True when a query task for the payment is still open.
pub async fn query_pending<'e>(
    e: impl Executor<'e, Database = Any>,
    payment_no: &str,
) -> sqlx::Result<bool> {
    let n: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM provider_tasks WHERE payment_no = $1 AND kind = 'query' AND status = 'PENDING'",
    )
    .bind(payment_no)
    .fetch_one(e)
    .await?;
    Ok(n > 0)
}

/// Asks about a payment soon: an open query task is brought forward to
/// `now`, else a new one is scheduled — unless a query for it ran in the
/// last `quiet` microseconds, so repeated triggers cannot turn into a flood
/// of provider calls. Returns whether anything changed.
pub async fn query_soon<'e>(
    e: impl Executor<'e, Database = Any> + Copy,
    payment_no: &str,
    now: i64,
    quiet: i64,
) -> sqlx::Result<bool> {
    let moved = sqlx::query(
        "UPDATE provider_tasks SET next_run_at = $1, updated_at = $1 \
         WHERE payment_no = $2 AND kind = 'query' AND status = 'PENDING' AND next_run_at > $1 \
           AND (attempts = 0 OR updated_at <= $3)",
    )
    .bind(now)
    .bind(payment_no)
    .bind(now - quiet)
    .execute(e)
    .await?;
    if moved.rows_affected() > 0 {
        return Ok(true);
    }
    let recent: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM provider_tasks WHERE payment_no = $1 AND kind = 'query' \
         AND (status = 'PENDING' OR (attempts > 0 AND updated_at > $2))",
    )
    .bind(payment_no)
    .bind(now - quiet)
    .fetch_one(e)
    .await?;
    if recent > 0 {
        return Ok(false);
    }
    schedule(e, QUERY, payment_no, now, now).await?;
    Ok(true)
}

// ---- The console ----------------------------------------------------

/// A provider call about a payment, as the console shows it.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct TaskLine {
    pub kind: String,
    pub status: String,
    pub attempts: i64,
    pub last_error: Option<String>,
    pub updated_at: i64,
}

pub async fn of_payment<'e>(
    e: impl Executor<'e, Database = Any>,
    payment_no: &str,
) -> sqlx::Result<Vec<TaskLine>> {
    sqlx::query_as(
        "SELECT kind, status, attempts, last_error, updated_at FROM provider_tasks \
         WHERE payment_no = $1 ORDER BY created_at",
    )
    .bind(payment_no)
    .fetch_all(e)
    .await
}
// ---- end of the console ---------------------------------------------
