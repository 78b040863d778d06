//! The `approval_policies` table: every version of the approval policy,
//! and the change waiting for approval (one at a time). A change becomes
//! ACTIVE — taking the next version number, the one before RETIRED — in
//! the statement that finds its approvals complete (`approvals::enough`).

use super::approvals::{Subject, enough, names_column};
use sqlx::{Any, AnyConnection, Executor};

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct PolicyRow {
    pub policy_id: String,
    pub version: Option<i64>,
    pub body_json: String,
    pub digest: String,
    pub reason: String,
    pub status: String,
    pub proposer_id: String,
    pub proposer_name: String,
    pub proposed_at: i64,
    pub required_approvals: i64,
    pub decided_by_name: Option<String>,
    pub decided_at: Option<i64>,
    pub active_from: Option<i64>,
    pub active_until: Option<i64>,
    /// Who approved it, one name a line.
    pub approved_by: Option<String>,
}

fn columns() -> String {
    format!(
        "policy_id, version, body_json, digest, reason, status, proposer_id, proposer_name, proposed_at, \
         required_approvals, decided_by_name, decided_at, active_from, active_until, {} AS approved_by",
        names_column(Subject::Policy, "approval_policies.policy_id")
    )
}

/// The version in force, if one was ever approved (else the default is).
pub async fn active<'e>(e: impl Executor<'e, Database = Any>) -> sqlx::Result<Option<PolicyRow>> {
    sqlx::query_as(&format!(
        "SELECT {} FROM approval_policies WHERE status = 'ACTIVE'",
        columns()
    ))
    .fetch_optional(e)
    .await
}

/// The change waiting for approval, if any.
pub async fn pending<'e>(e: impl Executor<'e, Database = Any>) -> sqlx::Result<Option<PolicyRow>> {
    sqlx::query_as(&format!(
        "SELECT {} FROM approval_policies WHERE status = 'PENDING'",
        columns()
    ))
    .fetch_optional(e)
    .await
}

/// Every version that was in force, and changes rejected, newest first.
pub async fn history<'e>(e: impl Executor<'e, Database = Any>) -> sqlx::Result<Vec<PolicyRow>> {
    sqlx::query_as(&format!(
        "SELECT {} FROM approval_policies WHERE status <> 'PENDING' \
         ORDER BY proposed_at DESC, COALESCE(version, 0) DESC LIMIT 100",
        columns()
    ))
    .fetch_all(e)
    .await
}

pub struct NewPolicy<'a> {
    pub id: &'a str,
    pub body_json: &'a str,
    pub digest: &'a str,
    pub reason: &'a str,
    pub proposer_id: &'a str,
    pub proposer_name: &'a str,
    pub proposed_at: i64,
    pub required: i64,
}

/// A proposed change; the table's index refuses a second one pending.
pub async fn insert(conn: &mut AnyConnection, p: &NewPolicy<'_>) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO approval_policies (policy_id, body_json, digest, reason, status, proposer_id, proposer_name, \
           proposed_at, required_approvals) VALUES ($1, $2, $3, $4, 'PENDING', $5, $6, $7, $8)",
    )
    .bind(p.id)
    .bind(p.body_json)
    .bind(p.digest)
    .bind(p.reason)
    .bind(p.proposer_id)
    .bind(p.proposer_name)
    .bind(p.proposed_at)
    .bind(p.required)
    .execute(conn)
    .await?;
    Ok(())
}

/// Puts change `id` in force if its approvals are complete: the version
/// in force is retired and the change takes the next number. The version
/// number, or None when it was not pending or lacks approvals.
pub async fn activate(
    conn: &mut AnyConnection,
    id: &str,
    by: &str,
    now: i64,
) -> sqlx::Result<Option<i64>> {
    let ready: i64 = sqlx::query_scalar(&format!(
        "SELECT COUNT(*) FROM approval_policies WHERE policy_id = $1 AND status = 'PENDING' AND {}",
        enough(Subject::Policy)
    ))
    .bind(id)
    .fetch_one(&mut *conn)
    .await?;
    if ready == 0 {
        return Ok(None);
    }
    sqlx::query(
        "UPDATE approval_policies SET status = 'RETIRED', active_until = $1 WHERE status = 'ACTIVE'",
    )
    .bind(now)
    .execute(&mut *conn)
    .await?;
    let done = sqlx::query(&format!(
        "UPDATE approval_policies SET status = 'ACTIVE', active_from = $1, decided_by_name = $2, decided_at = $1, \
           version = (SELECT COALESCE(MAX(v.version), 0) + 1 FROM approval_policies v) \
         WHERE policy_id = $3 AND status = 'PENDING' AND {}",
        enough(Subject::Policy)
    ))
    .bind(now)
    .bind(by)
    .bind(id)
    .execute(&mut *conn)
    .await?
    .rows_affected();
    if done == 0 {
        return Ok(None);
    }
    sqlx::query_scalar("SELECT version FROM approval_policies WHERE policy_id = $1")
        .bind(id)
        .fetch_one(&mut *conn)
        .await
}

/// Rejects change `id`, by an admin who may decide it (the approval's
/// conditions on who decides). False when it was not pending or the
/// decider may not decide it.
pub async fn reject(
    conn: &mut AnyConnection,
    id: &str,
    by_id: &str,
    by: &str,
    now: i64,
) -> sqlx::Result<bool> {
    use super::users::{decider_confirmed, independent_of};
    let done = sqlx::query(&format!(
        "UPDATE approval_policies SET status = 'REJECTED', decided_by_name = $1, decided_at = $2 \
         WHERE policy_id = $3 AND status = 'PENDING' AND proposer_id <> $4 AND {} AND {} \
           AND EXISTS (SELECT 1 FROM users au WHERE au.id = $4 AND au.role = 'admin')",
        decider_confirmed("$4"),
        independent_of("$4", "approval_policies.proposer_id"),
    ))
    .bind(by)
    .bind(now)
    .bind(id)
    .bind(by_id)
    .execute(conn)
    .await?
    .rows_affected();
    Ok(done == 1)
}

/// A change's proposer.
pub async fn proposer_of<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
) -> sqlx::Result<Option<(String, String)>> {
    sqlx::query_as("SELECT proposer_id, status FROM approval_policies WHERE policy_id = $1")
        .bind(id)
        .fetch_optional(e)
        .await
}
