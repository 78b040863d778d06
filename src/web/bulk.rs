//! Bulk jobs read through the API (Bearer API token): a job's progress for
//! a script or a monitor. Starting, deciding or cancelling bulk work is the
//! console's (`/api/bulk/…` server functions): an API token names no person,
//! and the two-person rule needs two.

use super::api_error::ApiError;
use super::bearer::Bearer;
use crate::engine::Engine;
use app::error::AppError;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};

pub fn router() -> Router<super::AppState> {
    Router::new().route("/api/v1/bulk/jobs/{job_id}", get(show_job))
}

/// A bulk job and its progress.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct BulkJobView {
    #[schema(example = "BULK0193A1B2C3D4E5F60718293A4B5C6D")]
    pub job_id: String,
    /// ASSIGN | COMMENT | CLOSE | PROPOSE | APPROVE | REJECT
    pub kind: String,
    /// The bulk proposal it proposes, approves or rejects.
    pub bulk_id: Option<String>,
    pub requested_by: String,
    /// RUNNING | CANCELLING | DONE | CANCELLED | FAILED
    pub status: String,
    pub total: i64,
    pub done: i64,
    pub skipped: i64,
    pub failed: i64,
    /// Items not worked (yet, or ever, once cancelled).
    pub pending: i64,
    pub error: Option<String>,
    /// Microseconds since the epoch, UTC.
    pub started_at: i64,
    pub finished_at: Option<i64>,
    /// Each skipped or failed item: ticket or proposal id, SKIPPED | FAILED, why.
    pub exceptions: Vec<(String, String, String)>,
}

/// `GET /api/v1/bulk/jobs/{job_id}`.
#[utoipa::path(get, path = "/api/v1/bulk/jobs/{job_id}", tag = "bulk",
    params(("job_id" = String, Path, max_length = 64, pattern = "^[!-~]+$")),
    responses(
        (status = 200, description = "The job with its counts and the items it skipped or failed", body = BulkJobView),
        (status = 404, description = "No such job", body = ApiError),
    ))]
pub async fn show_job(
    State(engine): State<Engine>,
    _token: Bearer,
    Path(job_id): Path<String>,
) -> Result<Json<BulkJobView>, ApiError> {
    match crate::console::bulk_job(&engine, &job_id).await {
        Ok(j) => Ok(Json(BulkJobView {
            job_id: j.id,
            kind: j.kind,
            bulk_id: j.bulk_id,
            requested_by: j.requested_by,
            status: j.status,
            total: j.total,
            done: j.done,
            skipped: j.skipped,
            failed: j.failed,
            pending: j.pending,
            error: j.error,
            started_at: j.started_at,
            finished_at: j.finished_at,
            exceptions: j.exceptions,
        })),
        Err(AppError::NotFound) => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("no bulk job {job_id}"),
        )),
        Err(e) => Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            e.to_string(),
        )),
    }
}
