//! The `fix_proposals` table: a fix proposed on a ticket, waiting for a
//! second person's decision (two-person rule). The deciding statements
//! carry their own conditions — never the proposer, never a decider whose
//! role is a pending grant or who vouched for the proposer (created their
//! account, granted or confirmed their role), never a decided, stale or
//! expired proposal — so the database refuses what the console would.

use super::approvals::{Subject, enough, names_column};
use super::users::{decider_confirmed, independent_of};
use app::tickets::Proposal;
use sqlx::any::AnyRow;
use sqlx::{Any, AnyConnection, Executor, Row};

/// A proposal's columns, with the count of approvers it needs and who
/// approved it so far (one name a line).
fn proposal_columns() -> String {
    format!(
        "p.proposal_id, p.discrepancy_id, d.class, p.kind, p.payment_no, p.before_json, \
         p.after_json, p.reason, p.evidence, p.proposer_id, p.proposer_name, p.proposed_at, p.expires_at, p.status, \
         p.stale_reason, p.decided_by_name, p.decided_at, p.decision_comment, p.result, p.required_approvals, \
         {} AS approved_by",
        names_column(Subject::Fix, "p.proposal_id")
    )
}

/// A proposal with its ticket's class, as the console shows it at `now`
/// (before and after pretty-printed; `expired` when past its time).
fn proposal_of(row: &AnyRow, now: i64) -> sqlx::Result<Proposal> {
    let pretty = |s: String| {
        serde_json::from_str::<serde_json::Value>(&s)
            .ok()
            .and_then(|v| serde_json::to_string_pretty(&v).ok())
            .unwrap_or(s)
    };
    let kind: String = row.try_get("kind")?;
    let expires_at: i64 = row.try_get("expires_at")?;
    let status: String = row.try_get("status")?;
    Ok(Proposal {
        expired: status == "PENDING" && expires_at <= now,
        id: row.try_get("proposal_id")?,
        ticket_id: row.try_get("discrepancy_id")?,
        ticket_class: row.try_get("class")?,
        kind: kind
            .parse()
            .map_err(|e: String| sqlx::Error::Decode(e.into()))?,
        payment_no: row.try_get("payment_no")?,
        before: pretty(row.try_get("before_json")?),
        after: pretty(row.try_get("after_json")?),
        reason: row.try_get("reason")?,
        evidence: row.try_get("evidence")?,
        proposer_id: row.try_get("proposer_id")?,
        proposer: row.try_get("proposer_name")?,
        proposed_at: row.try_get("proposed_at")?,
        expires_at,
        status,
        stale_reason: row.try_get("stale_reason")?,
        decided_by: row.try_get("decided_by_name")?,
        decided_at: row.try_get("decided_at")?,
        decision_comment: row.try_get("decision_comment")?,
        result: row.try_get("result")?,
        required: row.try_get("required_approvals")?,
        approved_by: row
            .try_get::<Option<String>, _>("approved_by")?
            .map(|s| s.lines().map(str::to_owned).collect())
            .unwrap_or_default(),
        comments: Vec::new(),
    })
}

/// `PENDING`: the approval queue, oldest first (a bulk proposal's items
/// are decided on its own page, not here). Otherwise the most recent
/// 200 of any state (or every proposal of one ticket).
pub async fn list<'e>(
    e: impl Executor<'e, Database = Any>,
    status: &str,
    ticket: Option<&str>,
    now: i64,
) -> sqlx::Result<Vec<Proposal>> {
    let base = format!(
        "SELECT {} FROM fix_proposals p JOIN discrepancies d ON d.discrepancy_id = p.discrepancy_id",
        proposal_columns()
    );
    let (sql, bind) = match (ticket, status) {
        (Some(t), _) => (
            format!("{base} WHERE p.discrepancy_id = $1 ORDER BY p.proposed_at"),
            Some(t.to_owned()),
        ),
        (None, "PENDING") => (
            format!(
                "{base} WHERE p.status = 'PENDING' AND p.bulk_id IS NULL ORDER BY p.proposed_at LIMIT 500"
            ),
            None,
        ),
        (None, _) => (
            format!("{base} ORDER BY p.proposed_at DESC LIMIT 200"),
            None,
        ),
    };
    let mut q = sqlx::query(&sql);
    if let Some(t) = bind {
        q = q.bind(t);
    }
    q.try_map(move |row: AnyRow| proposal_of(&row, now))
        .fetch_all(e)
        .await
}

/// Every item of bulk proposal `bulk_id`, in the order proposed.
pub async fn of_bulk<'e>(
    e: impl Executor<'e, Database = Any>,
    bulk_id: &str,
    now: i64,
) -> sqlx::Result<Vec<Proposal>> {
    sqlx::query(&format!(
        "SELECT {} FROM fix_proposals p JOIN discrepancies d ON d.discrepancy_id = p.discrepancy_id \
         WHERE p.bulk_id = $1 ORDER BY p.proposed_at, p.proposal_id",
        proposal_columns()
    ))
    .bind(bulk_id.to_owned())
    .try_map(move |row: AnyRow| proposal_of(&row, now))
    .fetch_all(e)
    .await
}

pub async fn get<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
    now: i64,
) -> sqlx::Result<Option<Proposal>> {
    sqlx::query(&format!(
        "SELECT {} FROM fix_proposals p JOIN discrepancies d ON d.discrepancy_id = p.discrepancy_id \
         WHERE p.proposal_id = $1",
        proposal_columns()
    ))
    .bind(id.to_owned())
    .try_map(move |row: AnyRow| proposal_of(&row, now))
    .fetch_optional(e)
    .await
}

/// What waits for `viewer`'s decision at `now`: fix proposals of others
/// that can still be approved and they have not approved yet (a bulk proposal's items counted once, as
/// the bulk), the earliest proposed, and the earliest to expire.
pub async fn waiting_for<'e>(
    e: impl Executor<'e, Database = Any>,
    viewer_id: &str,
    now: i64,
) -> sqlx::Result<(i64, Option<i64>, Option<i64>)> {
    sqlx::query_as(&format!(
        "SELECT COUNT(DISTINCT COALESCE(bulk_id, proposal_id)), MIN(proposed_at), MIN(expires_at) \
         FROM fix_proposals WHERE status = 'PENDING' AND stale_reason IS NULL AND expires_at > $1 \
           AND proposer_id <> $2 AND {} AND {} AND NOT EXISTS (SELECT 1 FROM approvals ap \
             WHERE ap.subject = 'fix' AND ap.subject_id = fix_proposals.proposal_id AND ap.approver_id = $2)",
        decider_confirmed("$2"),
        independent_of("$2", "fix_proposals.proposer_id"),
    ))
    .bind(now)
    .bind(viewer_id)
    .fetch_one(e)
    .await
}

/// Proposals of the ticket that can still be approved at `now` (pending,
/// not stale, not expired).
pub async fn live_count<'e>(
    e: impl Executor<'e, Database = Any>,
    ticket: &str,
    now: i64,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM fix_proposals WHERE discrepancy_id = $1 AND status = 'PENDING' \
           AND stale_reason IS NULL AND expires_at > $2",
    )
    .bind(ticket)
    .bind(now)
    .fetch_one(e)
    .await
}

/// A ticket that closes takes its waiting proposals with it: none can be
/// approved afterwards. (A newer proposal supersedes them too.)
pub async fn supersede_pending(
    conn: &mut sqlx::AnyConnection,
    ticket_id: &str,
    why: &str,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE fix_proposals SET status = 'SUPERSEDED', result = $1 WHERE discrepancy_id = $2 AND status = 'PENDING'",
    )
    .bind(why)
    .bind(ticket_id)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

pub struct NewProposal<'a> {
    pub id: &'a str,
    pub ticket_id: &'a str,
    pub kind: &'a str,
    pub payment_no: Option<&'a str>,
    /// The payment's version the proposal saw (none: it creates the payment).
    pub payment_version: Option<i64>,
    pub before_json: &'a str,
    pub after_json: &'a str,
    pub reason: &'a str,
    pub evidence: &'a str,
    pub proposer_id: &'a str,
    pub proposer_name: &'a str,
    pub proposed_at: i64,
    pub expires_at: i64,
    /// The bulk proposal this is an item of.
    pub bulk_id: Option<&'a str>,
    /// How many distinct approvers it needs, under policy `policy_version`.
    pub required: i64,
    pub policy_version: i64,
}

pub async fn insert(conn: &mut AnyConnection, p: &NewProposal<'_>) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO fix_proposals (proposal_id, discrepancy_id, kind, payment_no, payment_version, before_json, \
           after_json, reason, evidence, proposer_id, proposer_name, proposed_at, expires_at, status, bulk_id, \
           required_approvals, policy_version) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, 'PENDING', $14, $15, $16)",
    )
    .bind(p.id)
    .bind(p.ticket_id)
    .bind(p.kind)
    .bind(p.payment_no)
    .bind(p.payment_version)
    .bind(p.before_json)
    .bind(p.after_json)
    .bind(p.reason)
    .bind(p.evidence)
    .bind(p.proposer_id)
    .bind(p.proposer_name)
    .bind(p.proposed_at)
    .bind(p.expires_at)
    .bind(p.bulk_id)
    .bind(p.required)
    .bind(p.policy_version)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Who decides, when, and why.
pub struct Decision<'a> {
    pub by_id: &'a str,
    pub by_name: &'a str,
    pub at: i64,
    pub comment: &'a str,
}

/// The approval that executes: one conditional statement, made by the
/// approver whose approval (`approvals::approve`, in the same transaction)
/// completed the count the proposal needs. The proposer never matches
/// (and the CHECK constraint refuses it even if this line changed), nor a
/// decider whose role is a pending grant or who vouched for the proposer;
/// a decided, stale or expired proposal never matches, nor one whose
/// ticket closed, nor one short of approvals; of two approvers at once,
/// the second finds it decided. Returns the rows changed.
pub async fn approve(conn: &mut AnyConnection, id: &str, d: &Decision<'_>) -> sqlx::Result<u64> {
    Ok(sqlx::query(&format!(
        "UPDATE fix_proposals SET status = 'EXECUTED', decided_by_id = $1, decided_by_name = $2, \
           decided_at = $3, decision_comment = $4 \
         WHERE proposal_id = $5 AND status = 'PENDING' AND stale_reason IS NULL AND expires_at > $3 \
           AND proposer_id <> $1 AND {} AND {} AND EXISTS (SELECT 1 FROM discrepancies d \
             WHERE d.discrepancy_id = fix_proposals.discrepancy_id AND d.status <> 'CLOSED') AND {}",
        decider_confirmed("$1"),
        independent_of("$1", "fix_proposals.proposer_id"),
        enough(Subject::Fix),
    ))
    .bind(d.by_id)
    .bind(d.by_name)
    .bind(d.at)
    .bind(d.comment)
    .bind(id)
    .execute(&mut *conn)
    .await?
    .rows_affected())
}

/// The rejection, under the approval's conditions on who decides (never
/// the proposer, a pending grant, or whoever vouched for the proposer);
/// returns the rows changed.
pub async fn reject(conn: &mut AnyConnection, id: &str, d: &Decision<'_>) -> sqlx::Result<u64> {
    Ok(sqlx::query(&format!(
        "UPDATE fix_proposals SET status = 'REJECTED', decided_by_id = $1, decided_by_name = $2, \
           decided_at = $3, decision_comment = $4 \
         WHERE proposal_id = $5 AND status = 'PENDING' AND proposer_id <> $1 AND {} AND {}",
        decider_confirmed("$1"),
        independent_of("$1", "fix_proposals.proposer_id"),
    ))
    .bind(d.by_id)
    .bind(d.by_name)
    .bind(d.at)
    .bind(d.comment)
    .bind(id)
    .execute(&mut *conn)
    .await?
    .rows_affected())
}

/// An approval that could not execute: FAILED, with why.
pub async fn fail(
    conn: &mut AnyConnection,
    id: &str,
    why: &str,
    d: &Decision<'_>,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE fix_proposals SET status = 'FAILED', result = $1, decided_by_id = $2, decided_by_name = $3, \
           decided_at = $4, decision_comment = $5 WHERE proposal_id = $6 AND status = 'PENDING'",
    )
    .bind(why)
    .bind(d.by_id)
    .bind(d.by_name)
    .bind(d.at)
    .bind(d.comment)
    .bind(id)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// The payment changed since the proposal: it stays pending, marked stale.
pub async fn mark_stale(conn: &mut AnyConnection, id: &str, why: &str) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE fix_proposals SET stale_reason = $1 WHERE proposal_id = $2 AND status = 'PENDING'",
    )
    .bind(why)
    .bind(id)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// What an executed proposal did.
pub async fn set_result(conn: &mut AnyConnection, id: &str, result: &str) -> sqlx::Result<()> {
    sqlx::query("UPDATE fix_proposals SET result = $1 WHERE proposal_id = $2")
        .bind(result)
        .bind(id)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// What a proposal intends, as stored: the payment's version it saw, its
/// before and after (JSON text).
pub async fn intent<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
) -> sqlx::Result<(Option<i64>, String, String)> {
    sqlx::query_as(
        "SELECT payment_version, before_json, after_json FROM fix_proposals WHERE proposal_id = $1",
    )
    .bind(id)
    .fetch_one(e)
    .await
}

/// The ticket a proposal is on.
pub async fn ticket_of<'e>(e: impl Executor<'e, Database = Any>, id: &str) -> sqlx::Result<String> {
    sqlx::query_scalar("SELECT discrepancy_id FROM fix_proposals WHERE proposal_id = $1")
        .bind(id)
        .fetch_one(e)
        .await
}
