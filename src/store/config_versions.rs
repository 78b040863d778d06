//! The `config_versions` table: the money-deciding settings' versions, the
//! host's recorded at start and the console's proposed and approved under
//! the two-person rule. The approving statement carries its own conditions
//! — never the proposer, never a decider whose role is a pending grant or
//! who vouched for the proposer, never a decided proposal, never one whose
//! base is no longer the version in force — so the database refuses what
//! the console would.

use super::users::{decider_confirmed, independent_of};
use sqlx::{Any, AnyConnection, Executor};

const COLUMNS: &str = "id, version, status, source, digest, body_json, base_version, reason, \
     proposed_by_id, proposed_by, approved_by_id, approved_by, created_at, decided_at, activated_at, \
     required_approvals, preview_json";

/// A version (or a proposal) as stored.
#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
pub struct VersionRow {
    pub id: String,
    /// None while PENDING or when REJECTED.
    pub version: Option<i64>,
    /// PENDING | ADOPTED | REJECTED
    pub status: String,
    /// host | console
    pub source: String,
    pub digest: String,
    pub body_json: String,
    pub base_version: Option<i64>,
    pub reason: Option<String>,
    pub proposed_by_id: Option<String>,
    pub proposed_by: String,
    pub approved_by_id: Option<String>,
    pub approved_by: Option<String>,
    pub created_at: i64,
    pub decided_at: Option<i64>,
    pub activated_at: Option<i64>,
    /// How many others approve a console proposal (the approval policy's
    /// count when it was proposed).
    pub required_approvals: i64,
    /// A change of the matching rules: what it would do, previewed when
    /// proposed (`recon::RulesPreview`s, JSON).
    pub preview_json: Option<String>,
}

/// The version in force: the highest number.
pub async fn in_force<'e>(
    e: impl Executor<'e, Database = Any>,
) -> sqlx::Result<Option<VersionRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM config_versions WHERE version IS NOT NULL ORDER BY version DESC LIMIT 1"
    ))
    .fetch_optional(e)
    .await
}

/// The host's latest version: what its file and environment said when it
/// last changed.
pub async fn last_of_host<'e>(
    e: impl Executor<'e, Database = Any>,
) -> sqlx::Result<Option<VersionRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM config_versions WHERE source = 'host' AND version IS NOT NULL \
         ORDER BY version DESC LIMIT 1"
    ))
    .fetch_optional(e)
    .await
}

/// Version `n`.
pub async fn by_number<'e>(
    e: impl Executor<'e, Database = Any>,
    n: i64,
) -> sqlx::Result<Option<VersionRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM config_versions WHERE version = $1"
    ))
    .bind(n)
    .fetch_optional(e)
    .await
}

/// Every numbered version, newest first, and the proposals decided or
/// waiting (newest first), at most `limit` rows.
pub async fn history<'e>(
    e: impl Executor<'e, Database = Any>,
    limit: i64,
) -> sqlx::Result<Vec<VersionRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM config_versions \
         ORDER BY created_at DESC, CASE WHEN version IS NULL THEN 1 ELSE 0 END DESC, version DESC, id DESC \
         LIMIT $1"
    ))
    .bind(limit)
    .fetch_all(e)
    .await
}

/// The proposal waiting for a decision, if any.
pub async fn pending<'e>(e: impl Executor<'e, Database = Any>) -> sqlx::Result<Option<VersionRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM config_versions WHERE status = 'PENDING'"
    ))
    .fetch_optional(e)
    .await
}

/// Records the host's settings as the next version, in force at once. Two
/// instances starting together take the same number: the second is
/// refused by the key (a unique violation) and looks again.
pub async fn record_host(
    conn: &mut AnyConnection,
    id: &str,
    digest: &str,
    body_json: &str,
    now: i64,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "INSERT INTO config_versions (id, version, status, source, digest, body_json, proposed_by, \
           approved_by, created_at, decided_at, activated_at) \
         SELECT $1, COALESCE(MAX(version), 0) + 1, 'ADOPTED', 'host', $2, $3, 'host', 'host', $4, $4, $4 \
         FROM config_versions RETURNING version",
    )
    .bind(id)
    .bind(digest)
    .bind(body_json)
    .bind(now)
    .fetch_one(conn)
    .await
}

/// A console proposal, PENDING. A second one while one waits is refused by
/// the key (a unique violation).
pub async fn propose(conn: &mut AnyConnection, r: &VersionRow) -> sqlx::Result<()> {
    sqlx::query::<Any>(
        "INSERT INTO config_versions (id, status, source, digest, body_json, base_version, reason, \
           proposed_by_id, proposed_by, created_at, required_approvals, preview_json) \
         VALUES ($1, 'PENDING', 'console', $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    )
    .bind(&r.id)
    .bind(&r.digest)
    .bind(&r.body_json)
    .bind(r.base_version)
    .bind(&r.reason)
    .bind(&r.proposed_by_id)
    .bind(&r.proposed_by)
    .bind(r.created_at)
    .bind(r.required_approvals)
    .bind(&r.preview_json)
    .execute(conn)
    .await?;
    Ok(())
}

/// The last approval it needs: one conditional statement giving the
/// proposal the next number once the approvals that still count reach
/// its number (`approvals`, subject settings). The proposer never matches (and the CHECK constraint refuses it
/// even if this line changed), nor a decider whose role is a pending grant
/// or who vouched for the proposer; a decided proposal never matches, nor
/// one whose base is no longer the version in force. Returns the number
/// given, if it matched.
pub async fn approve(
    conn: &mut AnyConnection,
    id: &str,
    by_id: &str,
    by_name: &str,
    now: i64,
) -> sqlx::Result<Option<i64>> {
    sqlx::query_scalar(&format!(
        "UPDATE config_versions SET status = 'ADOPTED', \
           version = (SELECT COALESCE(MAX(v.version), 0) + 1 FROM config_versions v), \
           approved_by_id = $1, approved_by = $2, decided_at = $3, activated_at = $3 \
         WHERE id = $4 AND status = 'PENDING' AND proposed_by_id <> $1 \
           AND base_version = (SELECT MAX(v.version) FROM config_versions v) \
           AND {} AND {} AND {} \
         RETURNING version",
        decider_confirmed("$1"),
        independent_of("$1", "config_versions.proposed_by_id"),
        super::approvals::enough(super::approvals::Subject::Settings),
    ))
    .bind(by_id)
    .bind(by_name)
    .bind(now)
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// A rejection (or the proposer's withdrawal): the proposer, or anyone who
/// may decide. Returns the rows changed.
pub async fn reject(
    conn: &mut AnyConnection,
    id: &str,
    by_id: &str,
    by_name: &str,
    now: i64,
) -> sqlx::Result<u64> {
    Ok(sqlx::query(&format!(
        "UPDATE config_versions SET status = 'REJECTED', approved_by_id = NULL, approved_by = $2, \
           decided_at = $3 \
         WHERE id = $4 AND status = 'PENDING' AND (proposed_by_id = $1 OR {})",
        decider_confirmed("$1"),
    ))
    .bind(by_id)
    .bind(by_name)
    .bind(now)
    .bind(id)
    .execute(conn)
    .await?
    .rows_affected())
}
