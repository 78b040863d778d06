//! The `day_closes` and `day_reopens` tables: a provider's business day
//! closed (a signed record chained to the provider's previous close), and
//! its reopening under the two-person rule. The deciding statements carry
//! their own conditions — never the proposer, nor a decider whose role is a
//! pending grant or who vouched for the proposer, never a decided proposal,
//! never a day that is not closed — so the database refuses what the
//! console would.

use super::approvals::{Subject, enough, names_column};
use super::users::{decider_confirmed, independent_of};
use sqlx::{Any, AnyConnection, Executor};

const CLOSE_COLUMNS: &str = "provider, seq, business_date, state, how, closed_by, reason, closed_at, \
     body_json, prev_hash, hash, key_id, signature, reopened_by, reopened_at, config_version";

/// A close record as stored.
#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
pub struct CloseRow {
    pub provider: String,
    pub seq: i64,
    pub business_date: String,
    /// CLOSED | REOPENED
    pub state: String,
    /// auto | supervisor
    pub how: String,
    pub closed_by: String,
    pub reason: Option<String>,
    pub closed_at: i64,
    /// The signed body, exactly as hashed.
    pub body_json: String,
    pub prev_hash: String,
    pub hash: String,
    pub key_id: String,
    pub signature: String,
    pub reopened_by: Option<String>,
    pub reopened_at: Option<i64>,
    /// The version of the money-deciding settings in force when the day
    /// closed (None: a close from before versions).
    pub config_version: Option<i64>,
}

/// A proposal to reopen a closed day.
#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
pub struct ReopenRow {
    pub reopen_id: String,
    pub provider: String,
    pub business_date: String,
    pub close_seq: i64,
    pub reason: String,
    pub proposer_id: String,
    pub proposer_name: String,
    pub proposed_at: i64,
    pub status: String,
    pub decided_by_name: Option<String>,
    pub decided_at: Option<i64>,
    /// How many distinct approvers it needs, fixed when it was proposed.
    pub required_approvals: i64,
    /// Who approved it so far, one name a line.
    pub approved_by: Option<String>,
}

/// The provider's last close record (any day, any state): what the next
/// one chains to.
pub async fn last_of_provider(
    conn: &mut AnyConnection,
    provider: &str,
) -> sqlx::Result<Option<CloseRow>> {
    sqlx::query_as(&format!(
        "SELECT {CLOSE_COLUMNS} FROM day_closes WHERE provider = $1 ORDER BY seq DESC LIMIT 1"
    ))
    .bind(provider)
    .fetch_optional(conn)
    .await
}

/// Writes a new close record. A day already closed, or a `seq` taken
/// meanwhile, is refused by the table's keys (a unique violation).
pub async fn insert(conn: &mut AnyConnection, r: &CloseRow) -> sqlx::Result<()> {
    sqlx::query::<Any>(
        "INSERT INTO day_closes (provider, seq, business_date, state, how, closed_by, reason, closed_at, \
         body_json, prev_hash, hash, key_id, signature, config_version) \
         VALUES ($1, $2, $3, 'CLOSED', $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
    )
    .bind(&r.provider)
    .bind(r.seq)
    .bind(&r.business_date)
    .bind(&r.how)
    .bind(&r.closed_by)
    .bind(&r.reason)
    .bind(r.closed_at)
    .bind(&r.body_json)
    .bind(&r.prev_hash)
    .bind(&r.hash)
    .bind(&r.key_id)
    .bind(&r.signature)
    .bind(r.config_version)
    .execute(conn)
    .await?;
    Ok(())
}

/// The day's close in force (CLOSED), if any.
pub async fn closed<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    date: &str,
) -> sqlx::Result<Option<CloseRow>> {
    sqlx::query_as(&format!(
        "SELECT {CLOSE_COLUMNS} FROM day_closes WHERE provider = $1 AND business_date = $2 AND state = 'CLOSED'"
    ))
    .bind(provider)
    .bind(date)
    .fetch_optional(e)
    .await
}

/// The day's latest close record (closed or reopened), if any.
pub async fn latest_of_day<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    date: &str,
) -> sqlx::Result<Option<CloseRow>> {
    sqlx::query_as(&format!(
        "SELECT {CLOSE_COLUMNS} FROM day_closes WHERE provider = $1 AND business_date = $2 \
         ORDER BY seq DESC LIMIT 1"
    ))
    .bind(provider)
    .bind(date)
    .fetch_optional(e)
    .await
}

/// A record by its place in the provider's chain.
pub async fn by_seq<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    seq: i64,
) -> sqlx::Result<Option<CloseRow>> {
    sqlx::query_as(&format!(
        "SELECT {CLOSE_COLUMNS} FROM day_closes WHERE provider = $1 AND seq = $2"
    ))
    .bind(provider)
    .bind(seq)
    .fetch_optional(e)
    .await
}

/// The day's open tickets of each severity.
pub async fn open_by_severity<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    date: &str,
) -> sqlx::Result<Vec<(String, i64)>> {
    sqlx::query_as(
        "SELECT severity, COUNT(*) FROM discrepancies \
         WHERE provider = $1 AND business_date = $2 AND status <> 'CLOSED' GROUP BY severity",
    )
    .bind(provider)
    .bind(date)
    .fetch_all(e)
    .await
}

/// A proposal to reopen the day's close `close_seq`. At most one is
/// pending per day (the table's index refuses a second).
pub async fn propose_reopen(
    conn: &mut AnyConnection,
    r: &ReopenRow,
    policy_version: i64,
) -> sqlx::Result<()> {
    sqlx::query::<Any>(
        "INSERT INTO day_reopens (reopen_id, provider, business_date, close_seq, reason, proposer_id, \
         proposer_name, proposed_at, status, required_approvals, policy_version) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'PENDING', $9, $10)",
    )
    .bind(&r.reopen_id)
    .bind(&r.provider)
    .bind(&r.business_date)
    .bind(r.close_seq)
    .bind(&r.reason)
    .bind(&r.proposer_id)
    .bind(&r.proposer_name)
    .bind(r.proposed_at)
    .bind(r.required_approvals)
    .bind(policy_version)
    .execute(conn)
    .await?;
    Ok(())
}

/// The day's pending reopen proposal, if any.
pub async fn pending_reopen<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    date: &str,
) -> sqlx::Result<Option<ReopenRow>> {
    sqlx::query_as(&format!(
        "SELECT reopen_id, provider, business_date, close_seq, reason, proposer_id, proposer_name, \
         proposed_at, status, decided_by_name, decided_at, required_approvals, {} AS approved_by \
         FROM day_reopens WHERE provider = $1 AND business_date = $2 AND status = 'PENDING'",
        names_column(Subject::Reopen, "day_reopens.reopen_id")
    ))
    .bind(provider)
    .bind(date)
    .fetch_optional(e)
    .await
}

/// Reopenings proposed by others than `viewer`, waiting: how many, and
/// the earliest proposed.
pub async fn reopens_waiting_for<'e>(
    e: impl Executor<'e, Database = Any>,
    viewer_id: &str,
) -> sqlx::Result<(i64, Option<i64>)> {
    sqlx::query_as(&format!(
        "SELECT COUNT(*), MIN(proposed_at) FROM day_reopens WHERE status = 'PENDING' AND proposer_id <> $1 \
           AND {} AND {} AND NOT EXISTS (SELECT 1 FROM approvals ap WHERE ap.subject = 'reopen' \
             AND ap.subject_id = day_reopens.reopen_id AND ap.approver_id = $1)",
        decider_confirmed("$1"),
        independent_of("$1", "day_reopens.proposer_id"),
    ))
    .bind(viewer_id)
    .fetch_one(e)
    .await
}

/// Decides a pending proposal: APPROVED or REJECTED, by someone who is not
/// its proposer, whose role is not a pending grant and who did not vouch
/// for the proposer (create their account, grant or confirm their role);
/// APPROVED only once its distinct approvals (`approvals::approve`, in the
/// same transaction) reach the count it needs. False when it is not
/// pending or the decider may not decide it.
pub async fn decide_reopen(
    conn: &mut AnyConnection,
    reopen_id: &str,
    status: &str,
    by_id: &str,
    by_name: &str,
    now: i64,
) -> sqlx::Result<bool> {
    let sql = format!(
        "UPDATE day_reopens SET status = $1, decided_by_id = $2, decided_by_name = $3, decided_at = $4 \
         WHERE reopen_id = $5 AND status = 'PENDING' AND proposer_id <> $2 AND {} AND {} \
           AND ($1 = 'REJECTED' OR {})",
        decider_confirmed("$2"),
        independent_of("$2", "day_reopens.proposer_id"),
        enough(Subject::Reopen),
    );
    let done = sqlx::query::<Any>(&sql)
        .bind(status)
        .bind(by_id)
        .bind(by_name)
        .bind(now)
        .bind(reopen_id)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Marks the close `seq` REOPENED (the record is otherwise kept as it
/// was signed). False when it was not CLOSED.
pub async fn mark_reopened(
    conn: &mut AnyConnection,
    provider: &str,
    seq: i64,
    by: &str,
    now: i64,
) -> sqlx::Result<bool> {
    let done = sqlx::query::<Any>(
        "UPDATE day_closes SET state = 'REOPENED', reopened_by = $1, reopened_at = $2 \
         WHERE provider = $3 AND seq = $4 AND state = 'CLOSED'",
    )
    .bind(by)
    .bind(now)
    .bind(provider)
    .bind(seq)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}
