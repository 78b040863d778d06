//! The reconciliation API under `/api/v1/recon/` (Bearer API token):
//! upload a statement for a provider and business day, read a run, read
//! the daily figures, pull a statement, resume a run. Each handler's
//! `utoipa::path` is its entry in the OpenAPI document.

use super::api_error::{ApiError, error};
use super::merchant::Merchant;
use crate::engine::Engine;
use crate::recon::{Import, Input, ReconDay, ReconError, RunRow};
use axum::Json;
use axum::extract::{Multipart, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// Largest statement accepted by upload (the CLI streams larger ones).
pub const UPLOAD_LIMIT: usize = 64 * 1024 * 1024;

fn recon_error(e: ReconError) -> Response {
    match e {
        ReconError::Invalid(m) => error(StatusCode::BAD_REQUEST, m),
        ReconError::Refused(m) => error(StatusCode::UNPROCESSABLE_ENTITY, m),
        ReconError::Store(e) => {
            tracing::error!(error = %e, "reconciliation storage error");
            error(StatusCode::INTERNAL_SERVER_ERROR, "storage error")
        }
    }
}

/// `POST /api/v1/recon/runs`, multipart: `provider`, `business_date`
/// (YYYY-MM-DD), `file`, optionally `accept_bad_lines` (a tolerance the
/// operator accepts: that many malformed lines skipped and listed).
#[utoipa::path(post, path = "/api/v1/recon/runs", tag = "reconciliation",
    request_body(content = UploadForm, content_type = "multipart/form-data"),
    responses(
        (status = 201, description = "The run, completed or failed (a refused statement)", body = RunRow),
        (status = 400, description = "An unreadable form, a missing or unknown field, an unknown provider or day", body = ApiError),
        (status = 422, description = "The statement was refused; the run is FAILED", body = ApiError),
    ))]
pub async fn upload(
    State(engine): State<Engine>,
    Merchant(actor): Merchant,
    mut form: Multipart,
) -> Response {
    let (mut provider, mut date, mut file, mut file_name) = (None, None, None, None);
    let mut accept_bad_lines = 0u32;
    loop {
        let field = match form.next_field().await {
            Ok(Some(f)) => f,
            Ok(None) => break,
            Err(e) => return error(StatusCode::BAD_REQUEST, format!("unreadable form: {e}")),
        };
        match field.name().unwrap_or_default() {
            "provider" => provider = field.text().await.ok(),
            "business_date" => date = field.text().await.ok(),
            "accept_bad_lines" => {
                match field.text().await.ok().and_then(|t| t.trim().parse().ok()) {
                    Some(n) => accept_bad_lines = n,
                    None => {
                        return error(
                            StatusCode::BAD_REQUEST,
                            "accept_bad_lines must be a whole number",
                        );
                    }
                }
            }
            "file" => {
                file_name = field.file_name().map(str::to_owned);
                match field.bytes().await {
                    Ok(b) => file = Some(b.to_vec()),
                    Err(e) => {
                        return error(
                            StatusCode::PAYLOAD_TOO_LARGE,
                            format!(
                                "the file could not be read (at most 64 MiB; larger statements go through `reckon recon import`): {e}"
                            ),
                        );
                    }
                }
            }
            other => {
                return error(StatusCode::BAD_REQUEST, format!("unknown field {other:?}"));
            }
        }
    }
    let (Some(provider), Some(date), Some(file)) = (provider, date, file) else {
        return error(
            StatusCode::BAD_REQUEST,
            "provider, business_date and file are required",
        );
    };
    let imp = Import {
        provider: provider.trim(),
        business_date: date.trim(),
        source: "upload",
        file_name: file_name.as_deref(),
        input: Input::Bytes(file),
        started_by: &actor,
        accept_bad_lines,
        run_id: None,
        hash: None,
    };
    match crate::recon::import_statement(&engine, imp).await {
        Ok(run) => (StatusCode::CREATED, Json(run)).into_response(),
        Err(e) => recon_error(e),
    }
}

/// The form `POST /api/v1/recon/runs` reads (by hand, as it streams).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub struct UploadForm {
    /// A configured provider's name.
    #[schema(example = "sandbox", pattern = "^[a-z0-9][a-z0-9-]{0,31}$")]
    provider: String,
    /// YYYY-MM-DD, in the configured time zone.
    #[schema(example = "2026-11-30", format = Date)]
    business_date: String,
    /// The provider's statement, at most 64 MiB.
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
    /// Malformed lines the operator accepts to skip; 0 when absent.
    #[schema(required = false)]
    accept_bad_lines: u32,
}

#[derive(serde::Deserialize, utoipa::ToSchema)]
pub struct PullRequest {
    /// A configured provider's name.
    #[schema(example = "sandbox", pattern = "^[a-z0-9][a-z0-9-]{0,31}$")]
    provider: String,
    /// YYYY-MM-DD, in the configured time zone.
    #[schema(example = "2026-11-30", format = Date)]
    business_date: String,
}

/// `POST /api/v1/recon/pulls` `{"provider", "business_date"}`.
#[utoipa::path(post, path = "/api/v1/recon/pulls", tag = "reconciliation",
    request_body = PullRequest,
    responses(
        (status = 201, description = "The run of the statement fetched from the provider", body = RunRow),
        (status = 400, description = "Invalid body, an unknown provider or day", body = ApiError),
        (status = 422, description = "The statement was refused; the run is FAILED", body = ApiError),
    ))]
pub async fn pull(
    State(engine): State<Engine>,
    Merchant(actor): Merchant,
    body: Result<Json<PullRequest>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let Json(req) = match body {
        Ok(b) => b,
        Err(r) => return error(StatusCode::BAD_REQUEST, r.body_text()),
    };
    match crate::recon::pull_statement(&engine, &req.provider, &req.business_date, &actor).await {
        Ok(run) => (StatusCode::CREATED, Json(run)).into_response(),
        Err(e) => recon_error(e),
    }
}

/// `POST /api/v1/recon/runs/{run_id}/resume`.
#[utoipa::path(post, path = "/api/v1/recon/runs/{run_id}/resume", tag = "reconciliation",
    params(("run_id" = String, Path, max_length = 64, pattern = "^[!-~]+$")),
    responses(
        (status = 200, description = "The run, resumed to its end", body = RunRow),
        (status = 400, description = "No such run, or it cannot be resumed", body = ApiError),
        (status = 422, description = "The statement was refused; the run is FAILED", body = ApiError),
    ))]
pub async fn resume(
    State(engine): State<Engine>,
    _m: Merchant,
    Path(run_id): Path<String>,
) -> Response {
    match crate::recon::resume_run(&engine, &run_id).await {
        Ok(run) => Json(run).into_response(),
        Err(e) => recon_error(e),
    }
}

/// `GET /api/v1/recon/runs/{run_id}`.
#[utoipa::path(get, path = "/api/v1/recon/runs/{run_id}", tag = "reconciliation",
    params(("run_id" = String, Path, max_length = 64, pattern = "^[!-~]+$")),
    responses(
        (status = 200, description = "The run", body = RunRow),
        (status = 404, description = "No such run", body = ApiError),
    ))]
pub async fn show(
    State(engine): State<Engine>,
    _m: Merchant,
    Path(run_id): Path<String>,
) -> Response {
    match crate::recon::find_run(&engine, &run_id).await {
        Ok(Some(run)) => Json(run).into_response(),
        Ok(None) => error(StatusCode::NOT_FOUND, format!("no run {run_id}")),
        Err(e) => recon_error(e.into()),
    }
}

#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Days {
    /// First day, YYYY-MM-DD.
    #[param(example = "2026-11-01", format = Date)]
    from: String,
    /// Last day, YYYY-MM-DD.
    #[param(example = "2026-11-30", format = Date)]
    to: String,
}

/// The days asked for that have a completed run.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct DayList {
    days: Vec<ReconDay>,
}

/// `GET /api/v1/recon/days?from=YYYY-MM-DD&to=YYYY-MM-DD`.
#[utoipa::path(get, path = "/api/v1/recon/days", tag = "reconciliation",
    params(Days),
    responses(
        (status = 200, description = "Each provider's latest completed run of each day", body = DayList),
        (status = 400, description = "A missing or invalid day", body = ApiError),
    ))]
pub async fn days(State(engine): State<Engine>, _m: Merchant, Query(q): Query<Days>) -> Response {
    for d in [&q.from, &q.to] {
        if d.parse::<jiff::civil::Date>().is_err() {
            return error(StatusCode::BAD_REQUEST, format!("{d:?} is not YYYY-MM-DD"));
        }
    }
    match crate::recon::recon_days(&engine, &q.from, &q.to).await {
        Ok(days) => Json(DayList { days }).into_response(),
        Err(e) => recon_error(e.into()),
    }
}
