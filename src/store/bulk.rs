//! Bulk work: the `bulk_proposals` table (one fix proposed for many
//! tickets; its items are `fix_proposals` rows carrying its id), and the
//! `bulk_jobs` / `bulk_job_items` tables — a list of tickets or items fixed
//! when a job starts, worked one transaction per item in the background,
//! its counts kept so a person can leave and come back, and a cancel the
//! runner sees before each item.

use sqlx::{Any, AnyConnection, Executor};

pub struct NewBulk<'a> {
    pub bulk_id: &'a str,
    pub kind: &'a str,
    pub reason: &'a str,
    pub evidence: &'a str,
    pub proposer_id: &'a str,
    pub proposer_name: &'a str,
    pub now: i64,
}

pub async fn insert_bulk(conn: &mut AnyConnection, b: &NewBulk<'_>) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO bulk_proposals (bulk_id, kind, reason, evidence, proposer_id, proposer_name, proposed_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(b.bulk_id)
    .bind(b.kind)
    .bind(b.reason)
    .bind(b.evidence)
    .bind(b.proposer_id)
    .bind(b.proposer_name)
    .bind(b.now)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// A bulk proposal with its items counted by status (a stale item is
/// counted apart from the pending ones that can still be approved).
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct BulkRow {
    pub bulk_id: String,
    pub kind: String,
    pub reason: String,
    pub evidence: String,
    pub proposer_id: String,
    pub proposer_name: String,
    pub proposed_at: i64,
    pub items: i64,
    pub pending: i64,
    pub stale: i64,
    pub executed: i64,
    pub rejected: i64,
    pub failed: i64,
}

const BULK_SELECT: &str = "SELECT b.bulk_id, b.kind, b.reason, b.evidence, b.proposer_id, b.proposer_name, b.proposed_at, \
       COUNT(p.proposal_id) AS items, \
       SUM(CASE WHEN p.status = 'PENDING' AND p.stale_reason IS NULL THEN 1 ELSE 0 END) AS pending, \
       SUM(CASE WHEN p.status = 'PENDING' AND p.stale_reason IS NOT NULL THEN 1 ELSE 0 END) AS stale, \
       SUM(CASE WHEN p.status = 'EXECUTED' THEN 1 ELSE 0 END) AS executed, \
       SUM(CASE WHEN p.status = 'REJECTED' THEN 1 ELSE 0 END) AS rejected, \
       SUM(CASE WHEN p.status IN ('FAILED', 'SUPERSEDED') THEN 1 ELSE 0 END) AS failed \
     FROM bulk_proposals b LEFT JOIN fix_proposals p ON p.bulk_id = b.bulk_id";

const BULK_GROUP: &str = " GROUP BY b.bulk_id, b.kind, b.reason, b.evidence, b.proposer_id, b.proposer_name, b.proposed_at";

pub async fn bulk<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
) -> sqlx::Result<Option<BulkRow>> {
    let sql = format!("{BULK_SELECT} WHERE b.bulk_id = $1{BULK_GROUP}");
    Ok(sqlx::query_as::<_, BulkRowNullable>(&sql)
        .bind(id)
        .fetch_optional(e)
        .await?
        .map(BulkRow::from))
}

/// The 50 most recent bulk proposals.
pub async fn recent_bulks<'e>(e: impl Executor<'e, Database = Any>) -> sqlx::Result<Vec<BulkRow>> {
    let sql = format!("{BULK_SELECT}{BULK_GROUP} ORDER BY b.proposed_at DESC LIMIT 50");
    Ok(sqlx::query_as::<_, BulkRowNullable>(&sql)
        .fetch_all(e)
        .await?
        .into_iter()
        .map(BulkRow::from)
        .collect())
}

/// The row as read: the sums are NULL when a bulk has no item.
#[derive(sqlx::FromRow)]
struct BulkRowNullable {
    bulk_id: String,
    kind: String,
    reason: String,
    evidence: String,
    proposer_id: String,
    proposer_name: String,
    proposed_at: i64,
    items: i64,
    pending: Option<i64>,
    stale: Option<i64>,
    executed: Option<i64>,
    rejected: Option<i64>,
    failed: Option<i64>,
}

impl From<BulkRowNullable> for BulkRow {
    fn from(r: BulkRowNullable) -> BulkRow {
        BulkRow {
            bulk_id: r.bulk_id,
            kind: r.kind,
            reason: r.reason,
            evidence: r.evidence,
            proposer_id: r.proposer_id,
            proposer_name: r.proposer_name,
            proposed_at: r.proposed_at,
            items: r.items,
            pending: r.pending.unwrap_or(0),
            stale: r.stale.unwrap_or(0),
            executed: r.executed.unwrap_or(0),
            rejected: r.rejected.unwrap_or(0),
            failed: r.failed.unwrap_or(0),
        }
    }
}

/// The bulk's items still waiting for a decision (stale ones included:
/// approving them reports them stale again, rejecting them ends them).
pub async fn pending_items<'e>(
    e: impl Executor<'e, Database = Any>,
    bulk_id: &str,
) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar(
        "SELECT proposal_id FROM fix_proposals WHERE bulk_id = $1 AND status = 'PENDING' ORDER BY proposed_at, proposal_id",
    )
    .bind(bulk_id)
    .fetch_all(e)
    .await
}

pub struct NewJob<'a> {
    pub job_id: &'a str,
    pub kind: &'a str,
    pub bulk_id: Option<&'a str>,
    pub params_json: &'a str,
    pub requested_by_id: &'a str,
    pub requested_by: &'a str,
    pub now: i64,
}

/// The job and its items (`targets`, in order), all PENDING.
pub async fn insert_job(
    conn: &mut AnyConnection,
    j: &NewJob<'_>,
    targets: &[String],
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO bulk_jobs (job_id, kind, bulk_id, params_json, requested_by_id, requested_by, status, total, \
           started_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, 'RUNNING', $7, $8, $8)",
    )
    .bind(j.job_id)
    .bind(j.kind)
    .bind(j.bulk_id)
    .bind(j.params_json)
    .bind(j.requested_by_id)
    .bind(j.requested_by)
    .bind(targets.len() as i64)
    .bind(j.now)
    .execute(&mut *conn)
    .await?;
    for (seq, target) in targets.iter().enumerate() {
        sqlx::query(
            "INSERT INTO bulk_job_items (job_id, seq, target_id, status) VALUES ($1, $2, $3, 'PENDING')",
        )
        .bind(j.job_id)
        .bind(seq as i64)
        .bind(target)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct JobRow {
    pub job_id: String,
    pub kind: String,
    pub bulk_id: Option<String>,
    pub params_json: String,
    pub requested_by_id: String,
    pub requested_by: String,
    pub status: String,
    pub total: i64,
    pub done: i64,
    pub skipped: i64,
    pub failed: i64,
    pub error: Option<String>,
    pub started_at: i64,
    pub updated_at: i64,
    pub finished_at: Option<i64>,
    /// A close job undone: the job that reopened its tickets.
    pub undone_by: Option<String>,
}

const JOB_COLUMNS: &str = "job_id, kind, bulk_id, params_json, requested_by_id, requested_by, status, total, done, \
     skipped, failed, error, started_at, updated_at, finished_at, undone_by";

pub async fn job<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
) -> sqlx::Result<Option<JobRow>> {
    sqlx::query_as(&format!(
        "SELECT {JOB_COLUMNS} FROM bulk_jobs WHERE job_id = $1"
    ))
    .bind(id)
    .fetch_optional(e)
    .await
}

/// The 20 most recent jobs, or those of one bulk proposal.
pub async fn recent_jobs<'e>(
    e: impl Executor<'e, Database = Any>,
    bulk_id: Option<&str>,
) -> sqlx::Result<Vec<JobRow>> {
    let sql = format!(
        "SELECT {JOB_COLUMNS} FROM bulk_jobs {} ORDER BY started_at DESC LIMIT 20",
        if bulk_id.is_some() {
            "WHERE bulk_id = $1"
        } else {
            ""
        }
    );
    let mut q = sqlx::query_as(&sql);
    if let Some(id) = bulk_id {
        q = q.bind(id.to_owned());
    }
    q.fetch_all(e).await
}

/// The job's status now (the runner asks before each item).
pub async fn status<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar("SELECT status FROM bulk_jobs WHERE job_id = $1")
        .bind(id)
        .fetch_optional(e)
        .await
}

/// The next items not yet worked, in order.
pub async fn next_items<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
    limit: i64,
) -> sqlx::Result<Vec<(i64, String)>> {
    sqlx::query_as(&format!(
        "SELECT seq, target_id FROM bulk_job_items WHERE job_id = $1 AND status = 'PENDING' ORDER BY seq LIMIT {limit}"
    ))
    .bind(id)
    .fetch_all(e)
    .await
}

/// How an item went: DONE, SKIPPED or FAILED, with why.
pub async fn item_worked(
    conn: &mut AnyConnection,
    id: &str,
    seq: i64,
    outcome: &str,
    detail: &str,
    now: i64,
) -> sqlx::Result<()> {
    debug_assert!(matches!(outcome, "DONE" | "SKIPPED" | "FAILED"));
    let worked = sqlx::query(
        "UPDATE bulk_job_items SET status = $1, detail = $2, at = $3 WHERE job_id = $4 AND seq = $5 AND status = 'PENDING'",
    )
    .bind(outcome)
    .bind(detail)
    .bind(now)
    .bind(id)
    .bind(seq)
    .execute(&mut *conn)
    .await?
    .rows_affected();
    // Counted once, with the item's own row.
    if worked == 1 {
        let column = match outcome {
            "DONE" => "done",
            "SKIPPED" => "skipped",
            _ => "failed",
        };
        sqlx::query(&format!(
            "UPDATE bulk_jobs SET {column} = {column} + 1, updated_at = $1 WHERE job_id = $2"
        ))
        .bind(now)
        .bind(id)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// The items a job did (DONE), in order: what an undo takes back.
pub async fn done_targets<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar(
        "SELECT target_id FROM bulk_job_items WHERE job_id = $1 AND status = 'DONE' ORDER BY seq",
    )
    .bind(id)
    .fetch_all(e)
    .await
}

/// Marks an ended close job undone by `by`; false when it was undone
/// already (or is not an ended close job), so one undo wins.
pub async fn mark_undone(
    conn: &mut AnyConnection,
    id: &str,
    by: &str,
    now: i64,
) -> sqlx::Result<bool> {
    Ok(sqlx::query(
        "UPDATE bulk_jobs SET undone_by = $1, updated_at = $2 \
         WHERE job_id = $3 AND kind = 'CLOSE' AND undone_by IS NULL AND status IN ('DONE', 'CANCELLED', 'FAILED')",
    )
    .bind(by)
    .bind(now)
    .bind(id)
    .execute(&mut *conn)
    .await?
    .rows_affected()
        == 1)
}

/// The items worked but not done (skipped or failed), with why — what a
/// person reads after the job.
pub async fn exceptions<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
) -> sqlx::Result<Vec<(String, String, String)>> {
    sqlx::query_as(
        "SELECT target_id, status, COALESCE(detail, '') FROM bulk_job_items \
         WHERE job_id = $1 AND status IN ('SKIPPED', 'FAILED') ORDER BY seq LIMIT 1000",
    )
    .bind(id)
    .fetch_all(e)
    .await
}

/// Asks a running job to stop before its next item; false when it is not
/// running.
pub async fn request_cancel<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
    now: i64,
) -> sqlx::Result<bool> {
    Ok(sqlx::query(
        "UPDATE bulk_jobs SET status = 'CANCELLING', updated_at = $1 WHERE job_id = $2 AND status = 'RUNNING'",
    )
    .bind(now)
    .bind(id)
    .execute(e)
    .await?
    .rows_affected()
        == 1)
}

/// The job ends: CANCELLED if a cancel was asked for, else DONE.
pub async fn finish<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE bulk_jobs SET status = CASE WHEN status = 'CANCELLING' THEN 'CANCELLED' ELSE 'DONE' END, \
           updated_at = $1, finished_at = $1 WHERE job_id = $2 AND status IN ('RUNNING', 'CANCELLING')",
    )
    .bind(now)
    .bind(id)
    .execute(e)
    .await?;
    Ok(())
}

/// The job stopped on an error (its worked items stay worked).
pub async fn fail<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
    error: &str,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE bulk_jobs SET status = 'FAILED', error = $1, updated_at = $2, finished_at = $2 \
         WHERE job_id = $3 AND status IN ('RUNNING', 'CANCELLING')",
    )
    .bind(error)
    .bind(now)
    .bind(id)
    .execute(e)
    .await?;
    Ok(())
}

/// Jobs a stopped process left running or cancelling: resumed at start.
pub async fn unfinished<'e>(e: impl Executor<'e, Database = Any>) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar(
        "SELECT job_id FROM bulk_jobs WHERE status IN ('RUNNING', 'CANCELLING') ORDER BY started_at",
    )
    .fetch_all(e)
    .await
}
