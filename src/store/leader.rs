//! The `job_leases` table: which instance runs each scheduled job, until
//! when. A lease is taken by one conditional statement (free, lapsed, or
//! already ours), so two instances on one database never both hold a job;
//! a holder that stopped loses it when its time runs out.

use sqlx::{Any, Executor};

/// Takes (or renews) `job`'s lease for `holder` until `until`: false when
/// another instance holds it past `now`.
pub async fn take<'e>(
    e: impl Executor<'e, Database = Any>,
    job: &str,
    holder: &str,
    now: i64,
    until: i64,
) -> sqlx::Result<bool> {
    let taken: Option<String> = sqlx::query_scalar(
        "INSERT INTO job_leases (job, holder, lease_until, taken_at) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (job) DO UPDATE SET holder = excluded.holder, \
           lease_until = excluded.lease_until, taken_at = excluded.taken_at \
         WHERE job_leases.lease_until <= $4 OR job_leases.holder = $2 \
         RETURNING job",
    )
    .bind(job)
    .bind(holder)
    .bind(until)
    .bind(now)
    .fetch_optional(e)
    .await?;
    Ok(taken.is_some())
}

/// Extends `holder`'s lease of `job` to `until` (never shortens it) while
/// its pass runs: false when the lease is no longer its own.
pub async fn extend<'e>(
    e: impl Executor<'e, Database = Any>,
    job: &str,
    holder: &str,
    until: i64,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE job_leases SET lease_until = CASE WHEN lease_until < $1 THEN $1 ELSE lease_until END \
         WHERE job = $2 AND holder = $3",
    )
    .bind(until)
    .bind(job)
    .bind(holder)
    .execute(e)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Who holds `job`'s lease at `now`, and until when (`None`: nobody, or
/// it lapsed).
pub async fn holder<'e>(
    e: impl Executor<'e, Database = Any>,
    job: &str,
    now: i64,
) -> sqlx::Result<Option<(String, i64)>> {
    sqlx::query_as("SELECT holder, lease_until FROM job_leases WHERE job = $1 AND lease_until > $2")
        .bind(job)
        .bind(now)
        .fetch_optional(e)
        .await
}
