//! The `held_actions` table: actions the approval policy holds until
//! others approve them (a sink's pause, a large bulk resend, a user's
//! creation, a token that can write). Approvals are counted in
//! `approvals` (subject held); the statement that marks one done carries
//! the count's condition, so the database refuses what the console would.

use super::approvals::{Subject, enough, names_column};
use super::users::decider_confirmed;
use sqlx::{Any, AnyConnection, Executor};

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct HeldRow {
    pub action_id: String,
    pub action: String,
    pub object_id: String,
    pub summary: String,
    pub reason: String,
    pub params_json: String,
    /// PENDING | DONE | REJECTED | WITHDRAWN
    pub status: String,
    pub proposer_id: String,
    pub proposer_name: String,
    pub proposed_at: i64,
    pub required_approvals: i64,
    pub policy_version: i64,
    pub decided_by_name: Option<String>,
    pub decided_at: Option<i64>,
    pub outcome: Option<String>,
    /// Who approved it, one name a line.
    pub approved_by: Option<String>,
}

fn columns() -> String {
    format!(
        "action_id, action, object_id, summary, reason, params_json, status, proposer_id, proposer_name, \
         proposed_at, required_approvals, policy_version, decided_by_name, decided_at, outcome, {} AS approved_by",
        names_column(Subject::Held, "held_actions.action_id")
    )
}

/// Holds an action. A second pending one on the same object is refused by
/// the key (a unique violation).
pub async fn insert(conn: &mut AnyConnection, r: &HeldRow) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO held_actions (action_id, action, object_id, summary, reason, params_json, status, \
           proposer_id, proposer_name, proposed_at, required_approvals, policy_version) \
         VALUES ($1, $2, $3, $4, $5, $6, 'PENDING', $7, $8, $9, $10, $11)",
    )
    .bind(&r.action_id)
    .bind(&r.action)
    .bind(&r.object_id)
    .bind(&r.summary)
    .bind(&r.reason)
    .bind(&r.params_json)
    .bind(&r.proposer_id)
    .bind(&r.proposer_name)
    .bind(r.proposed_at)
    .bind(r.required_approvals)
    .bind(r.policy_version)
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn by_id<'e>(
    e: impl Executor<'e, Database = Any>,
    id: &str,
) -> sqlx::Result<Option<HeldRow>> {
    sqlx::query_as(&format!(
        "SELECT {} FROM held_actions WHERE action_id = $1",
        columns()
    ))
    .bind(id)
    .fetch_optional(e)
    .await
}

/// The pending actions, oldest first, then the `limit` latest decided.
pub async fn listed<'e>(
    e: impl Executor<'e, Database = Any>,
    limit: i64,
) -> sqlx::Result<Vec<HeldRow>> {
    sqlx::query_as(&format!(
        "SELECT {} FROM held_actions WHERE status = 'PENDING' OR action_id IN \
           (SELECT d.action_id FROM held_actions d WHERE d.status <> 'PENDING' \
            ORDER BY d.decided_at DESC LIMIT $1) \
         ORDER BY CASE WHEN status = 'PENDING' THEN 0 ELSE 1 END, proposed_at DESC",
        columns()
    ))
    .bind(limit)
    .fetch_all(e)
    .await
}

/// The last approval it needs marks it done, once the approvals that
/// still count reach its number. Rows changed (0: not yet, or decided).
pub async fn mark_done(
    conn: &mut AnyConnection,
    id: &str,
    by_name: &str,
    now: i64,
) -> sqlx::Result<u64> {
    Ok(sqlx::query(&format!(
        "UPDATE held_actions SET status = 'DONE', decided_by_name = $1, decided_at = $2 \
         WHERE action_id = $3 AND status = 'PENDING' AND {}",
        enough(Subject::Held)
    ))
    .bind(by_name)
    .bind(now)
    .bind(id)
    .execute(conn)
    .await?
    .rows_affected())
}

/// What ran, and the parameters without their secrets.
pub async fn set_outcome(
    conn: &mut AnyConnection,
    id: &str,
    outcome: &str,
    params_json: &str,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE held_actions SET outcome = $1, params_json = $2 WHERE action_id = $3")
        .bind(outcome)
        .bind(params_json)
        .bind(id)
        .execute(conn)
        .await?;
    Ok(())
}

/// The proposer withdraws it, or someone who could approve it rejects
/// it; the parameters' secrets go with it. Rows changed.
pub async fn reject(
    conn: &mut AnyConnection,
    id: &str,
    by_id: &str,
    by_name: &str,
    now: i64,
    params_json: &str,
) -> sqlx::Result<u64> {
    Ok(sqlx::query(&format!(
        "UPDATE held_actions SET status = CASE WHEN proposer_id = $1 THEN 'WITHDRAWN' ELSE 'REJECTED' END, \
           decided_by_name = $2, decided_at = $3, params_json = $5 \
         WHERE action_id = $4 AND status = 'PENDING' AND (proposer_id = $1 OR ({} \
           AND (action IN ('SINK_PAUSE', 'BULK_RESEND') \
             OR EXISTS (SELECT 1 FROM users ra WHERE ra.id = $1 AND ra.role = 'admin'))))",
        decider_confirmed("$1"),
    ))
    .bind(by_id)
    .bind(by_name)
    .bind(now)
    .bind(id)
    .bind(params_json)
    .execute(conn)
    .await?
    .rows_affected())
}
