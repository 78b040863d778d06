//! The `statement_pulls` table: one row per provider and business day the
//! schedule pulls — its lease (taken by one conditional statement, so two
//! instances on one database never pull one day at once), its tries and
//! when the next may start, how the last one ended.

use sqlx::{Any, Executor};

/// A provider's day as the schedule left it.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct PullRow {
    pub provider: String,
    pub business_date: String,
    pub tries: i64,
    pub next_at: i64,
    pub last_at: Option<i64>,
    pub last_run_id: Option<String>,
    pub last_error: Option<String>,
    pub done: i64,
}

/// Takes the day's lease for `owner` until `until`, returning the tries
/// made before: `None` when another holds it or, for the schedule
/// (`scheduled`), when the day is done or its next try is not due at `now`
/// (a pull by hand waits for neither).
pub async fn take<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    date: &str,
    owner: &str,
    until: i64,
    now: i64,
    scheduled: bool,
) -> sqlx::Result<Option<i64>> {
    sqlx::query_scalar(
        "INSERT INTO statement_pulls (provider, business_date, owner, lease_until, tries, next_at, done) \
         VALUES ($1, $2, $3, $4, 0, 0, 0) \
         ON CONFLICT (provider, business_date) DO UPDATE SET owner = excluded.owner, lease_until = excluded.lease_until \
         WHERE statement_pulls.lease_until <= $5 \
           AND ($6 = 0 OR (statement_pulls.done = 0 AND statement_pulls.next_at <= $5)) \
         RETURNING tries",
    )
    .bind(provider)
    .bind(date)
    .bind(owner)
    .bind(until)
    .bind(now)
    .bind(i32::from(scheduled))
    .fetch_optional(e)
    .await
}

/// Who holds the day's lease, and until when (`None`: nobody, or it
/// expired by `now`).
pub async fn holder<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    date: &str,
    now: i64,
) -> sqlx::Result<Option<(String, i64)>> {
    sqlx::query_as(
        "SELECT owner, lease_until FROM statement_pulls \
         WHERE provider = $1 AND business_date = $2 AND owner IS NOT NULL AND lease_until > $3",
    )
    .bind(provider)
    .bind(date)
    .bind(now)
    .fetch_optional(e)
    .await
}

/// How a try ended.
pub struct Tried<'a> {
    pub run_id: Option<&'a str>,
    pub error: Option<&'a str>,
    /// The day has a completed run (a failed pull by hand of a day
    /// completed before leaves it done).
    pub done: bool,
    /// When the next scheduled try may start; `None` for a pull by hand,
    /// which neither counts as a try nor moves the next one.
    pub next_at: Option<i64>,
    pub now: i64,
}

/// The lease given back with how the try ended (only by its owner).
pub async fn release<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    date: &str,
    owner: &str,
    t: &Tried<'_>,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE statement_pulls SET owner = NULL, lease_until = 0, tries = tries + $1, \
           next_at = COALESCE($2, next_at), last_at = $3, last_run_id = COALESCE($4, last_run_id), \
           last_error = $5, done = CASE WHEN $6 = 1 THEN 1 ELSE done END \
         WHERE provider = $7 AND business_date = $8 AND owner = $9",
    )
    .bind(i64::from(t.next_at.is_some()))
    .bind(t.next_at)
    .bind(t.now)
    .bind(t.run_id)
    .bind(
        t.error
            .map(|e| crate::domain::clip(e, super::recon_runs::MAX_ERROR).into_owned()),
    )
    .bind(i32::from(t.done))
    .bind(provider)
    .bind(date)
    .bind(owner)
    .execute(e)
    .await?;
    Ok(())
}

/// The days `from..=to` of a provider that have a completed run (pulled,
/// uploaded or imported).
pub async fn completed_days<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    from: &str,
    to: &str,
) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar(
        "SELECT DISTINCT business_date FROM recon_runs WHERE provider = $1 AND status = 'COMPLETED' \
           AND business_date >= $2 AND business_date <= $3 ORDER BY business_date",
    )
    .bind(provider)
    .bind(from)
    .bind(to)
    .fetch_all(e)
    .await
}

/// A provider's days from `from` on, as the schedule left them, latest
/// first.
pub async fn of_provider<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    from: &str,
) -> sqlx::Result<Vec<PullRow>> {
    sqlx::query_as(
        "SELECT provider, business_date, tries, next_at, last_at, last_run_id, \
           CASE WHEN LENGTH(last_error) > 2000 THEN SUBSTR(last_error, 1, 2000) || '…' ELSE last_error END AS last_error, \
           CAST(done AS BIGINT) AS done \
         FROM statement_pulls WHERE provider = $1 AND business_date >= $2 ORDER BY business_date DESC",
    )
    .bind(provider)
    .bind(from)
    .fetch_all(e)
    .await
}
