//! The `replay_jobs` table: a bulk replay of one provider's DEAD callbacks
//! over a time range, run in the background; its progress is kept so a
//! person can leave the page and come back.

use sqlx::{Any, Executor};

pub struct NewJob<'a> {
    pub job_id: &'a str,
    pub provider: &'a str,
    pub from_at: i64,
    pub to_at: i64,
    pub requested_by: &'a str,
    /// DEAD callbacks in the range when it started.
    pub total: i64,
    pub now: i64,
}

pub async fn insert<'e>(e: impl Executor<'e, Database = Any>, j: &NewJob<'_>) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO replay_jobs (job_id, provider, from_at, to_at, requested_by, status, total, done, started_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, 'RUNNING', $6, 0, $7, $7)",
    )
    .bind(j.job_id)
    .bind(j.provider)
    .bind(j.from_at)
    .bind(j.to_at)
    .bind(j.requested_by)
    .bind(j.total)
    .bind(j.now)
    .execute(e)
    .await?;
    Ok(())
}

/// `done` callbacks replayed so far, and how each went (JSON).
pub async fn progress<'e>(
    e: impl Executor<'e, Database = Any>,
    job_id: &str,
    done: i64,
    classes_json: &str,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE replay_jobs SET done = $1, classes_json = $2, updated_at = $3 WHERE job_id = $4",
    )
    .bind(done)
    .bind(classes_json)
    .bind(now)
    .bind(job_id)
    .execute(e)
    .await?;
    Ok(())
}

pub async fn finish<'e>(
    e: impl Executor<'e, Database = Any>,
    job_id: &str,
    total: i64,
    classes_json: &str,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE replay_jobs SET status = 'DONE', total = $1, done = $1, classes_json = $2, finished_at = $3, updated_at = $3 \
         WHERE job_id = $4",
    )
    .bind(total)
    .bind(classes_json)
    .bind(now)
    .bind(job_id)
    .execute(e)
    .await?;
    Ok(())
}

pub async fn fail<'e>(
    e: impl Executor<'e, Database = Any>,
    job_id: &str,
    error: &str,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE replay_jobs SET status = 'FAILED', error = $1, finished_at = $2, updated_at = $2 WHERE job_id = $3",
    )
    .bind(error)
    .bind(now)
    .bind(job_id)
    .execute(e)
    .await?;
    Ok(())
}

/// A job as the console lists it, with what its classes and liveness are
/// read from.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct JobRow {
    #[sqlx(flatten)]
    pub job: app::console::ReplayJob,
    pub classes_json: String,
    pub updated_at: i64,
}

/// The 20 most recent jobs, or the one named.
pub async fn recent<'e>(
    e: impl Executor<'e, Database = Any>,
    job_id: Option<&str>,
) -> sqlx::Result<Vec<JobRow>> {
    let sql = format!(
        "SELECT job_id AS id, provider, from_at, to_at, requested_by, status, total, done, classes_json, error, \
           started_at, updated_at, finished_at FROM replay_jobs {} ORDER BY started_at DESC LIMIT 20",
        if job_id.is_some() {
            "WHERE job_id = $1"
        } else {
            ""
        }
    );
    let mut q = sqlx::query_as(&sql);
    if let Some(id) = job_id {
        q = q.bind(id.to_owned());
    }
    q.fetch_all(e).await
}
