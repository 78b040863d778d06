//! Outbox sinks through the API (Bearer API token):
//! each sink's state and deliveries by state, pausing or resuming one, and
//! making its deliveries that wait for a later retry due now, each with a
//! reason — audited as `token:<name>`, as the console audits a person
//! by name.

use super::api_error::ApiError;
use super::bearer::Bearer;
use crate::engine::Engine;
use app::error::AppError;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};

pub fn router() -> Router<super::AppState> {
    Router::new()
        .route("/api/v1/sinks", get(list))
        .route("/api/v1/sinks/{name}/pause", post(pause))
        .route("/api/v1/sinks/{name}/resume", post(resume))
        .route("/api/v1/sinks/{name}/retry", post(retry))
}

/// A configured outbox sink. Its secrets are never shown.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct SinkView {
    #[schema(example = "fulfilment")]
    pub name: String,
    /// The URL without user, password or query.
    pub url: String,
    /// Exact event types or prefixes (`payment.*`); empty: every event.
    pub event_types: Vec<String>,
    /// Retry delays after each failed attempt; past the last, DEAD.
    #[schema(example = json!(["5s", "5m", "30m", "2h", "5h", "10h", "10h"]))]
    pub schedule: Vec<String>,
    pub timeout_secs: u64,
    /// ACTIVE | PAUSED | FAILING
    pub state: String,
    pub paused_at: Option<i64>,
    pub paused_by: Option<String>,
    pub pause_reason: Option<String>,
    /// Deliveries waiting for their first attempt.
    pub pending: i64,
    /// Deliveries that failed and wait for their next attempt.
    pub retrying: i64,
    pub dead: i64,
    /// Attempts failed in a row since the last delivery.
    pub consecutive_failures: i64,
    /// Microseconds since the epoch, UTC.
    pub failing_since: Option<i64>,
    pub last_success_at: Option<i64>,
    pub last_failure_at: Option<i64>,
    pub last_error: Option<String>,
}

/// Why a sink is paused or resumed.
#[derive(serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PauseRequest {
    #[schema(example = "fulfilment is migrating its database until 18:00")]
    pub reason: String,
}

/// What "retry now" did.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct RetryNowView {
    #[schema(example = "fulfilment")]
    pub sink: String,
    /// Pending deliveries that waited for a later retry, due now (0:
    /// nothing was waiting, nothing changed and nothing was audited).
    pub made_due: i64,
    #[schema(example = "3 deliveries to fulfilment are due now")]
    pub detail: String,
}

fn api_error(e: AppError, name: &str) -> ApiError {
    match e {
        AppError::NotFound => ApiError::new(StatusCode::NOT_FOUND, format!("no sink {name}")),
        AppError::Required { .. } | AppError::Invalid { .. } => {
            ApiError::new(StatusCode::BAD_REQUEST, e.to_string())
        }
        AppError::Held { .. } => ApiError::new(StatusCode::CONFLICT, e.to_string()),
        e => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

async fn sink_views(engine: &Engine) -> Result<Vec<SinkView>, ApiError> {
    let rows = crate::console::sinks::list(engine)
        .await
        .map_err(|e| api_error(e, ""))?;
    Ok(rows
        .into_iter()
        .map(|s| SinkView {
            name: s.name,
            url: s.url,
            event_types: s.event_types,
            schedule: s.schedule,
            timeout_secs: s.timeout_secs,
            state: s.state,
            paused_at: s.paused_at,
            paused_by: s.paused_by,
            pause_reason: s.pause_reason,
            pending: s.pending,
            retrying: s.retrying,
            dead: s.dead,
            consecutive_failures: s.consecutive_failures,
            failing_since: s.failing_since,
            last_success_at: s.last_success_at,
            last_failure_at: s.last_failure_at,
            last_error: s.last_error,
        })
        .collect())
}

/// `GET /api/v1/sinks`.
#[utoipa::path(get, path = "/api/v1/sinks", tag = "sinks",
    responses((status = 200, description = "Every configured sink with its state and deliveries by state", body = Vec<SinkView>)))]
pub async fn list(
    State(engine): State<Engine>,
    _token: Bearer,
) -> Result<Json<Vec<SinkView>>, ApiError> {
    Ok(Json(sink_views(&engine).await?))
}

async fn set(
    engine: &Engine,
    actor: &crate::policy::held::Proposer,
    name: &str,
    body: Result<Json<PauseRequest>, axum::extract::rejection::JsonRejection>,
    pause: bool,
) -> Result<Json<SinkView>, ApiError> {
    let Json(req) = body.map_err(super::merchant::unreadable)?;
    crate::outbox::sinks::set_paused(engine, &actor.name, Some(actor), name, &req.reason, pause)
        .await
        .map_err(|e| api_error(e, name))?;
    let view = sink_views(engine)
        .await?
        .into_iter()
        .find(|s| s.name == name)
        .ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, format!("no sink {name}")))?;
    Ok(Json(view))
}

/// `POST /api/v1/sinks/{name}/pause`: its deliveries wait, no attempt
/// spent, until it is resumed.
#[utoipa::path(post, path = "/api/v1/sinks/{name}/pause", tag = "sinks",
    params(("name" = String, Path, max_length = 64, pattern = "^[A-Za-z0-9._-]+$")),
    request_body = PauseRequest,
    responses(
        (status = 200, description = "The sink, paused", body = SinkView),
        (status = 400, description = "No reason, or the sink is already paused", body = ApiError),
        (status = 409, description = "Held for approval under the approval policy: the error names the held action", body = ApiError),
        (status = 404, description = "No such sink", body = ApiError),
    ))]
pub async fn pause(
    State(engine): State<Engine>,
    Bearer(token): Bearer,
    Path(name): Path<String>,
    body: Result<Json<PauseRequest>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<SinkView>, ApiError> {
    set(&engine, &token.proposer(), &name, body, true).await
}

/// `POST /api/v1/sinks/{name}/resume`: its waiting deliveries go out.
#[utoipa::path(post, path = "/api/v1/sinks/{name}/resume", tag = "sinks",
    params(("name" = String, Path, max_length = 64, pattern = "^[A-Za-z0-9._-]+$")),
    request_body = PauseRequest,
    responses(
        (status = 200, description = "The sink, active again", body = SinkView),
        (status = 400, description = "No reason, or the sink is not paused", body = ApiError),
        (status = 404, description = "No such sink", body = ApiError),
    ))]
pub async fn resume(
    State(engine): State<Engine>,
    Bearer(token): Bearer,
    Path(name): Path<String>,
    body: Result<Json<PauseRequest>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<SinkView>, ApiError> {
    set(&engine, &token.proposer(), &name, body, false).await
}

/// `POST /api/v1/sinks/{name}/retry`: every pending delivery to the sink
/// that waits for a later retry is due now (after an outage, instead of
/// the schedule's next step).
#[utoipa::path(post, path = "/api/v1/sinks/{name}/retry", tag = "sinks",
    params(("name" = String, Path, max_length = 64, pattern = "^[A-Za-z0-9._-]+$")),
    request_body = PauseRequest,
    responses(
        (status = 200, description = "How many deliveries were made due (0: nothing was waiting)", body = RetryNowView),
        (status = 400, description = "No reason, or the sink is paused (resume it first)", body = ApiError),
        (status = 404, description = "No such sink", body = ApiError),
    ))]
pub async fn retry(
    State(engine): State<Engine>,
    Bearer(token): Bearer,
    Path(name): Path<String>,
    body: Result<Json<PauseRequest>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<RetryNowView>, ApiError> {
    let Json(req) = body.map_err(super::merchant::unreadable)?;
    let done = crate::outbox::sinks::retry_now(&engine, &token.actor(), &name, &req.reason)
        .await
        .map_err(|e| api_error(e, &name))?;
    Ok(Json(RetryNowView {
        detail: done.detail(),
        sink: done.sink,
        made_due: done.made_due,
    }))
}
