//! The `report_pushes` table: reports a provider said are ready, each once
//! per provider and file name; fetched and imported by the statement beat
//! (`recon::fetch_pushed_reports`), each try leased by one conditional
//! statement so two instances never fetch one file at once.

use sqlx::{Any, Executor};

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct PushRow {
    pub provider: String,
    pub file_name: String,
    pub url: String,
    pub made_at: Option<i64>,
    pub received_at: i64,
    pub tries: i64,
    pub done: i64,
    pub run_id: Option<String>,
    pub last_error: Option<String>,
}

/// Records a push; `false` when the file was pushed before (nothing
/// changes: a notification sent again).
pub async fn record<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    push: &crate::providers::ReportPush,
    now: i64,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "INSERT INTO report_pushes (provider, file_name, url, made_at, received_at, next_at) \
         VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT (provider, file_name) DO NOTHING",
    )
    .bind(provider)
    .bind(&push.file_name)
    .bind(&push.url)
    .bind(push.made_at)
    .bind(now)
    .execute(e)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Up to `limit` pushes not done whose next try is due at `now`, oldest
/// first.
pub async fn due<'e>(
    e: impl Executor<'e, Database = Any>,
    now: i64,
    limit: i64,
) -> sqlx::Result<Vec<PushRow>> {
    sqlx::query_as(
        "SELECT provider, file_name, url, made_at, received_at, tries, done, run_id, last_error \
         FROM report_pushes WHERE done = 0 AND next_at <= $1 AND lease_until <= $1 \
         ORDER BY received_at, provider, file_name LIMIT $2",
    )
    .bind(now)
    .bind(limit)
    .fetch_all(e)
    .await
}

/// Takes a push's lease until `until`; `false` when another holds it or it
/// is done.
pub async fn take<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    file_name: &str,
    now: i64,
    until: i64,
) -> sqlx::Result<bool> {
    let taken = sqlx::query(
        "UPDATE report_pushes SET lease_until = $1 \
         WHERE provider = $2 AND file_name = $3 AND done = 0 AND lease_until <= $4",
    )
    .bind(until)
    .bind(provider)
    .bind(file_name)
    .bind(now)
    .execute(e)
    .await?;
    Ok(taken.rows_affected() == 1)
}

/// A try's end: done with the run that read it, or failed with why and
/// when to try again. The lease is given back.
pub async fn tried<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
    file_name: &str,
    run_id: Option<&str>,
    error: Option<&str>,
    next_at: Option<i64>,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE report_pushes SET lease_until = 0, tries = tries + 1, \
           done = CASE WHEN $1 IS NULL THEN 1 ELSE 0 END, next_at = COALESCE($1, next_at), \
           run_id = COALESCE($2, run_id), last_error = $3 \
         WHERE provider = $4 AND file_name = $5",
    )
    .bind(next_at)
    .bind(run_id)
    .bind(error.map(|e| crate::domain::clip(e, super::recon_runs::MAX_ERROR).into_owned()))
    .bind(provider)
    .bind(file_name)
    .execute(e)
    .await?;
    Ok(())
}

/// A provider's pushes, latest first (for tests and the command line).
pub async fn of_provider<'e>(
    e: impl Executor<'e, Database = Any>,
    provider: &str,
) -> sqlx::Result<Vec<PushRow>> {
    sqlx::query_as(
        "SELECT provider, file_name, url, made_at, received_at, tries, done, run_id, last_error \
         FROM report_pushes WHERE provider = $1 ORDER BY received_at DESC, file_name",
    )
    .bind(provider)
    .fetch_all(e)
    .await
}
