//! The outbox through the API (Bearer API token): every message with each
//! sink's delivery, a message's attempts, resending one message, and the
//! bulk resend and recover jobs. A token is a machine's, issued by an
//! admin; its writes are audited as `token:<name>`. In the console the same
//! operations need the operator or supervisor role.

use super::api_error::ApiError;
use super::bearer::Bearer;
use crate::engine::Engine;
use crate::outbox::jobs::Run;
use app::error::AppError;
use app::outbox::{OutboxDetail, OutboxFilter, OutboxJob, OutboxPage, Resent};
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};

pub fn router() -> Router<super::AppState> {
    Router::new()
        .route("/api/v1/outbox", get(list))
        .route("/api/v1/outbox/resend", post(bulk_resend))
        .route("/api/v1/outbox/recover", post(recover))
        .route("/api/v1/outbox/jobs/{job_id}", get(show_job))
        .route("/api/v1/outbox/jobs/{job_id}/cancel", post(cancel_job))
        .route("/api/v1/outbox/{message_id}", get(show))
        .route("/api/v1/outbox/{message_id}/resend", post(resend))
}

/// The console's errors as the API's: a refusal names itself.
fn refused(e: AppError) -> ApiError {
    let status = StatusCode::from_u16(e.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let message = match e {
        AppError::Invalid { detail } | AppError::Refused { detail } => detail,
        other => other.to_string(),
    };
    ApiError::new(status, message)
}

/// `refused`, with a 404 that names what is missing.
fn refused_or_missing(e: AppError, missing: impl FnOnce() -> String) -> ApiError {
    match e {
        AppError::NotFound => ApiError::new(StatusCode::NOT_FOUND, missing()),
        e => refused(e),
    }
}

/// `GET /api/v1/outbox`: newest first, 50 a page.
#[utoipa::path(get, path = "/api/v1/outbox", tag = "outbox",
    params(OutboxFilter),
    responses(
        (status = 200, description = "A page of messages with each sink's delivery", body = OutboxPage),
        (status = 400, description = "An unknown status, or a time that is neither RFC 3339 nor YYYY-MM-DD", body = ApiError),
    ))]
pub async fn list(
    State(engine): State<Engine>,
    _token: Bearer,
    Query(filter): Query<OutboxFilter>,
) -> Result<Json<OutboxPage>, ApiError> {
    use app::filter::QueryFilter;
    crate::console::outbox::list(&engine, &filter.cleaned())
        .await
        .map(Json)
        .map_err(refused)
}

/// `GET /api/v1/outbox/{message_id}`.
#[utoipa::path(get, path = "/api/v1/outbox/{message_id}", tag = "outbox",
    params(("message_id" = String, Path, max_length = 64, pattern = "^[!-~]+$")),
    responses(
        (status = 200, description = "The message, its payload and every attempt kept per sink", body = OutboxDetail),
        (status = 404, description = "No such message", body = ApiError),
    ))]
pub async fn show(
    State(engine): State<Engine>,
    _token: Bearer,
    Path(message_id): Path<String>,
) -> Result<Json<OutboxDetail>, ApiError> {
    crate::console::outbox::message(&engine, &message_id)
        .await
        .map(Json)
        .map_err(|e| refused_or_missing(e, || format!("no message {message_id}")))
}

#[derive(Debug, Default, serde::Deserialize, utoipa::ToSchema)]
pub struct ResendRequest {
    /// One sink; all the message's sinks when absent.
    #[schema(example = "fulfilment", max_length = 64)]
    #[serde(default)]
    sink: Option<String>,
}

/// `POST /api/v1/outbox/{message_id}/resend` `{"sink"?}`: the same
/// message (same `webhook-id`) queued again, due now.
#[utoipa::path(post, path = "/api/v1/outbox/{message_id}/resend", tag = "outbox",
    params(("message_id" = String, Path, max_length = 64, pattern = "^[!-~]+$")),
    request_body(content = Option<ResendRequest>, description = "Optional; no body resends to every sink"),
    responses(
        (status = 200, description = "Queued again; the sinks it was pending for already are named", body = Resent),
        (status = 400, description = "An unreadable body, an unknown sink, or a sink the message was never meant for", body = ApiError),
        (status = 404, description = "No such message", body = ApiError),
        (status = 409, description = "Nothing to do: the delivery is already pending", body = ApiError),
    ))]
pub async fn resend(
    State(engine): State<Engine>,
    Bearer(token): Bearer,
    Path(message_id): Path<String>,
    body: Result<Json<ResendRequest>, JsonRejection>,
) -> Result<Json<Resent>, ApiError> {
    let req = match body {
        Ok(Json(r)) => r,
        // No body (or no JSON content type with an empty body): every sink.
        Err(JsonRejection::MissingJsonContentType(_)) => ResendRequest::default(),
        Err(e) => return Err(super::merchant::unreadable(e)),
    };
    let sink = req.sink.as_deref().map(str::trim).filter(|s| !s.is_empty());
    crate::outbox::jobs::resend(&engine, &token.actor(), &message_id, sink)
        .await
        .map(Json)
        .map_err(|e| refused_or_missing(e, || format!("no message {message_id}")))
}

/// `POST /api/v1/outbox/resend` with the list's filter: every delivery it
/// matches that is not pending (only the filter's sink and status when it
/// names them), queued again by a background job.
#[utoipa::path(post, path = "/api/v1/outbox/resend", tag = "outbox",
    request_body = OutboxFilter,
    responses(
        (status = 202, description = "The job, started; follow it at /api/v1/outbox/jobs/{job_id}", body = OutboxJob),
        (status = 400, description = "An unreadable filter, an unknown sink or status, a bad time", body = ApiError),
        (status = 409, description = "Held for approval under the approval policy (above its number of deliveries): the error names the held action", body = ApiError),
    ))]
pub async fn bulk_resend(
    State(engine): State<Engine>,
    Bearer(token): Bearer,
    body: Result<Json<OutboxFilter>, JsonRejection>,
) -> Result<(StatusCode, Json<OutboxJob>), ApiError> {
    use app::filter::QueryFilter;
    let Json(filter) = body.map_err(super::merchant::unreadable)?;
    let job = crate::outbox::jobs::start_resend(
        &engine,
        &token.actor(),
        Some(&token.proposer()),
        &filter.cleaned(),
        Run::Background,
    )
    .await
    .map_err(refused)?;
    Ok((StatusCode::ACCEPTED, Json(job)))
}

#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
pub struct RecoverRequest {
    /// A configured sink.
    #[schema(example = "fulfilment", max_length = 64)]
    sink: String,
    /// RFC 3339, or a business day YYYY-MM-DD (its start): DEAD deliveries
    /// whose last attempt was at or after it.
    #[schema(example = "2026-12-01T00:00:00Z", max_length = 40)]
    since: String,
}

/// `POST /api/v1/outbox/recover` `{"sink", "since"}`: after a sink's
/// outage, every delivery to it that went DEAD since then queued again.
#[utoipa::path(post, path = "/api/v1/outbox/recover", tag = "outbox",
    request_body = RecoverRequest,
    responses(
        (status = 202, description = "The job, started, with how many deliveries it queues (total)", body = OutboxJob),
        (status = 400, description = "An unreadable body, an unknown sink, a bad time", body = ApiError),
    ))]
pub async fn recover(
    State(engine): State<Engine>,
    Bearer(token): Bearer,
    body: Result<Json<RecoverRequest>, JsonRejection>,
) -> Result<(StatusCode, Json<OutboxJob>), ApiError> {
    let Json(req) = body.map_err(super::merchant::unreadable)?;
    let job = crate::outbox::jobs::start_recover(
        &engine,
        &token.actor(),
        req.sink.trim(),
        req.since.trim(),
        Run::Background,
    )
    .await
    .map_err(refused)?;
    Ok((StatusCode::ACCEPTED, Json(job)))
}

/// `GET /api/v1/outbox/jobs/{job_id}`.
#[utoipa::path(get, path = "/api/v1/outbox/jobs/{job_id}", tag = "outbox",
    params(("job_id" = String, Path, max_length = 64, pattern = "^[!-~]+$")),
    responses(
        (status = 200, description = "The job and its counts", body = OutboxJob),
        (status = 404, description = "No such job", body = ApiError),
    ))]
pub async fn show_job(
    State(engine): State<Engine>,
    _token: Bearer,
    Path(job_id): Path<String>,
) -> Result<Json<OutboxJob>, ApiError> {
    crate::outbox::jobs::job(&engine, &job_id)
        .await
        .map(Json)
        .map_err(|e| refused_or_missing(e, || format!("no outbox job {job_id}")))
}

/// `POST /api/v1/outbox/jobs/{job_id}/cancel`: stops before its next
/// chunk; what was queued stays queued.
#[utoipa::path(post, path = "/api/v1/outbox/jobs/{job_id}/cancel", tag = "outbox",
    params(("job_id" = String, Path, max_length = 64, pattern = "^[!-~]+$")),
    responses(
        (status = 200, description = "Cancelling: the job stops before its next chunk", body = OutboxJob),
        (status = 404, description = "No such job", body = ApiError),
        (status = 409, description = "The job is not running", body = ApiError),
    ))]
pub async fn cancel_job(
    State(engine): State<Engine>,
    Bearer(token): Bearer,
    Path(job_id): Path<String>,
) -> Result<Json<OutboxJob>, ApiError> {
    crate::outbox::jobs::cancel(&engine, &token.actor(), &job_id)
        .await
        .map(Json)
        .map_err(|e| refused_or_missing(e, || format!("no outbox job {job_id}")))
}
