//! The reconciliation API under `/api/v1/recon/` (Bearer API token):
//! upload a statement for a provider and business day, read a run, read
//! the daily figures.

use super::merchant::Merchant;
use crate::engine::Engine;
use crate::recon::{Import, Input, ReconError};
use axum::Json;
use axum::extract::{Multipart, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// Largest statement accepted by upload (the CLI streams larger ones).
pub const UPLOAD_LIMIT: usize = 64 * 1024 * 1024;

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(serde_json::json!({ "error": message.into() }))).into_response()
}

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
    match engine.import_statement(imp).await {
        Ok(run) => (StatusCode::CREATED, Json(run)).into_response(),
        Err(e) => recon_error(e),
    }
}

#[derive(serde::Deserialize)]
pub struct PullRequest {
    provider: String,
    business_date: String,
}

/// `POST /api/v1/recon/pulls` `{"provider", "business_date"}`.
pub async fn pull(
    State(engine): State<Engine>,
    Merchant(actor): Merchant,
    body: Result<Json<PullRequest>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let Json(req) = match body {
        Ok(b) => b,
        Err(r) => return error(StatusCode::BAD_REQUEST, r.body_text()),
    };
    match engine
        .pull_statement(&req.provider, &req.business_date, &actor)
        .await
    {
        Ok(run) => (StatusCode::CREATED, Json(run)).into_response(),
        Err(e) => recon_error(e),
    }
}

/// `POST /api/v1/recon/runs/{run_id}/resume`.
pub async fn resume(
    State(engine): State<Engine>,
    _m: Merchant,
    Path(run_id): Path<String>,
) -> Response {
    match engine.resume_run(&run_id).await {
        Ok(run) => Json(run).into_response(),
        Err(e) => recon_error(e),
    }
}

pub async fn show(
    State(engine): State<Engine>,
    _m: Merchant,
    Path(run_id): Path<String>,
) -> Response {
    match engine.run(&run_id).await {
        Ok(Some(run)) => Json(run).into_response(),
        Ok(None) => error(StatusCode::NOT_FOUND, format!("no run {run_id}")),
        Err(e) => recon_error(e.into()),
    }
}

#[derive(serde::Deserialize)]
pub struct Days {
    from: String,
    to: String,
}

/// `GET /api/v1/recon/days?from=YYYY-MM-DD&to=YYYY-MM-DD`.
pub async fn days(State(engine): State<Engine>, _m: Merchant, Query(q): Query<Days>) -> Response {
    for d in [&q.from, &q.to] {
        if d.parse::<jiff::civil::Date>().is_err() {
            return error(StatusCode::BAD_REQUEST, format!("{d:?} is not YYYY-MM-DD"));
        }
    }
    match engine.recon_days(&q.from, &q.to).await {
        Ok(days) => Json(serde_json::json!({ "days": days })).into_response(),
        Err(e) => recon_error(e.into()),
    }
}
