//! The reconciliation API under `/api/v1/recon/` (Bearer API token):
//! upload a statement for a provider and business day, read a run, read
//! the daily figures, pull a statement, resume a run, download its file. Each handler's
//! `utoipa::path` is its entry in the OpenAPI document.

use super::AppState;
use super::api_error::ApiError;
use super::api_types::{Run, Settlement};
use super::bearer::Bearer;
use super::upload::{self, FormError};
use crate::console::run_export::Format;
use crate::engine::Engine;
use crate::recon::{Import, ReconDay, ReconError};
use axum::extract::{DefaultBodyLimit, Multipart, Path, Query, State};
use axum::http::{HeaderName, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::timeout::TimeoutLayer;

/// Largest statement accepted by upload (the CLI streams larger ones).
pub const UPLOAD_LIMIT: usize = 64 * 1024 * 1024;

/// The reconciliation API's routes but the upload.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/recon/runs/{run_id}", get(show))
        .route("/api/v1/recon/days", get(days))
        .route("/api/v1/recon/pulls", post(pull))
        .route("/api/v1/recon/settlements", post(settle))
        .route("/api/v1/recon/runs/{run_id}/resume", post(resume))
        .route("/api/v1/recon/runs/{run_id}/file", get(file))
        .route("/api/v1/recon/runs/{run_id}/results.csv", get(results_csv))
        .route(
            "/api/v1/recon/runs/{run_id}/results.parquet",
            get(results_parquet),
        )
        .route("/api/v1/recon/runs/{run_id}/preview", post(preview_run))
        .route("/api/v1/recon/closes/{provider}/{date}", get(close_report))
        .route("/api/v1/recon/closes/verify", post(verify_close))
        .route("/api/v1/disputes", get(disputes))
}

/// The upload: statements are larger than anything else, so it has its
/// own body limits and time.
pub fn upload_router(state: AppState) -> Router {
    Router::new()
        .route("/api/v1/recon/runs", post(upload))
        .route("/api/v1/recon/previews", post(preview))
        .layer(DefaultBodyLimit::max(UPLOAD_LIMIT))
        .layer(RequestBodyLimitLayer::new(UPLOAD_LIMIT + 64 * 1024))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            UPLOAD_TIME,
        ))
        .with_state(state)
}

/// How long a statement upload (and its run) may take.
pub const UPLOAD_TIME: std::time::Duration = std::time::Duration::from_secs(600);

impl From<ReconError> for ApiError {
    fn from(e: ReconError) -> ApiError {
        match e {
            ReconError::Invalid(m) => ApiError::new(StatusCode::BAD_REQUEST, m),
            ReconError::Refused(m) => ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, m),
            ReconError::Busy(m) => ApiError::new(StatusCode::CONFLICT, m),
            ReconError::Store(e) => {
                tracing::error!(error = %e, "reconciliation storage error");
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "storage error")
            }
        }
    }
}

/// Why the upload form was refused, as the API answers it.
fn form_refused(e: FormError) -> ApiError {
    match e {
        FormError::Unreadable(e) => {
            ApiError::new(StatusCode::BAD_REQUEST, format!("unreadable form: {e}"))
        }
        FormError::FileBroken(e) => ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "the file could not be read (at most 64 MiB; larger statements go through `reckon recon import`): {e}"
            ),
        ),
        FormError::NotKept(e) => {
            tracing::error!(error = %e, "an uploaded statement could not be kept");
            ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "storage error")
        }
        refused => ApiError::new(
            StatusCode::BAD_REQUEST,
            refused.field_message().unwrap_or_default(),
        ),
    }
}

/// `POST /api/v1/recon/runs`, multipart: `provider`, `business_date`
/// (YYYY-MM-DD), `file`, optionally `accept_bad_lines` (a tolerance the
/// operator accepts: that many malformed lines skipped and listed).
#[utoipa::path(post, path = "/api/v1/recon/runs", tag = "reconciliation",
    request_body(content = UploadForm, content_type = "multipart/form-data"),
    responses(
        (status = 201, description = "The run, completed or failed (a refused statement)", body = Run),
        (status = 200, description = "The file was already reconciled for that day: the earlier run, its `note` saying so; nothing was read again", body = Run),
        (status = 400, description = "An unreadable form, a missing, unknown or overlong field, an unknown provider or day", body = ApiError),
        (status = 409, description = "The day is closed (named, with its close); the run is FAILED saying so", body = ApiError),
        (status = 422, description = "The statement was refused: the run is FAILED; or the file is another provider's bill (named), and no run was started", body = ApiError),
    ))]
pub async fn upload(
    State(engine): State<Engine>,
    Bearer(token): Bearer,
    form: Multipart,
) -> Result<Response, ApiError> {
    let form = upload::read(form).await.map_err(form_refused)?;
    let (Some(provider), Some(date), Some(file)) = (form.provider, form.business_date, form.file)
    else {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "provider, business_date and file are required",
        ));
    };
    let actor = token.actor();
    let imp = Import {
        provider: provider.trim(),
        business_date: date.trim(),
        source: "upload",
        file_name: file.name.as_deref(),
        input: file.input(),
        started_by: &actor,
        accept_bad_lines: form.accept_bad_lines,
        run_id: None,
        hash: Some(file.hash.clone()),
    };
    let run = crate::recon::import_statement(&engine, imp).await?;
    let status = match run.note {
        Some(_) => StatusCode::OK,
        None => StatusCode::CREATED,
    };
    Ok((status, Json(Run::from(run))).into_response())
}

/// `POST /api/v1/recon/previews`, multipart as `POST /api/v1/recon/runs`:
/// the statement read, matched and classified as a run would, under the
/// matching rules in force, and nothing written — no run, ticket, repair
/// or hold. The answer compares it with the last real run of that day.
#[utoipa::path(post, path = "/api/v1/recon/previews", tag = "reconciliation",
    request_body(content = UploadForm, content_type = "multipart/form-data"),
    responses(
        (status = 200, description = "What a run would find, and its difference from the day's last run", body = crate::recon::Preview),
        (status = 400, description = "An unreadable form, a missing, unknown or overlong field, an unknown provider or day", body = ApiError),
        (status = 422, description = "The statement would be refused (said why), or is another provider's bill", body = ApiError),
    ))]
pub async fn preview(
    State(engine): State<Engine>,
    _token: Bearer,
    form: Multipart,
) -> Result<Json<crate::recon::Preview>, ApiError> {
    let form = upload::read(form).await.map_err(form_refused)?;
    let (Some(provider), Some(date), Some(file)) = (form.provider, form.business_date, form.file)
    else {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "provider, business_date and file are required",
        ));
    };
    let imp = Import {
        provider: provider.trim(),
        business_date: date.trim(),
        source: "upload",
        file_name: file.name.as_deref(),
        input: file.input(),
        started_by: "preview",
        accept_bad_lines: form.accept_bad_lines,
        run_id: None,
        hash: Some(file.hash.clone()),
    };
    Ok(Json(
        crate::recon::preview_statement(&engine, imp, None).await?,
    ))
}

/// `POST /api/v1/recon/runs/{run_id}/preview`: a completed run's statement
/// (its kept file, or a pull's rows) run again under the matching rules in
/// force, writing nothing, compared with the day's last run.
#[utoipa::path(post, path = "/api/v1/recon/runs/{run_id}/preview", tag = "reconciliation",
    params(("run_id" = String, Path, max_length = 64, pattern = "^[!-~]+$")),
    responses(
        (status = 200, description = "What the run would find now", body = crate::recon::Preview),
        (status = 400, description = "No such run, not completed, or its file is no longer kept", body = ApiError),
    ))]
pub async fn preview_run(
    State(engine): State<Engine>,
    _token: Bearer,
    Path(run_id): Path<String>,
) -> Result<Json<crate::recon::Preview>, ApiError> {
    Ok(Json(
        crate::recon::preview_run(&engine, &run_id, None).await?,
    ))
}

/// The form `POST /api/v1/recon/runs` reads (by hand, as it streams).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub struct UploadForm {
    /// A configured provider's name.
    #[schema(example = "sandbox", pattern = "^[a-z0-9][a-z0-9-]{0,31}$")]
    provider: String,
    /// YYYY-MM-DD, a day of the provider's statement: cut in China time for
    /// WeChat Pay and Alipay, else in the configured time zone
    /// (`RECKON_PULL_TIMES` sets an account's own).
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
    /// YYYY-MM-DD, a day of the provider's statement: cut in China time for
    /// WeChat Pay and Alipay, else in the configured time zone
    /// (`RECKON_PULL_TIMES` sets an account's own).
    #[schema(example = "2026-11-30", format = Date)]
    business_date: String,
}

/// `POST /api/v1/recon/pulls` `{"provider", "business_date"}`.
#[utoipa::path(post, path = "/api/v1/recon/pulls", tag = "reconciliation",
    request_body = PullRequest,
    responses(
        (status = 201, description = "The run of the statement fetched from the provider", body = Run),
        (status = 400, description = "Invalid body, an unknown provider or day", body = ApiError),
        (status = 409, description = "Another pull of the day holds its lease (named; no run was started), or the day is closed (a FAILED run says so)", body = ApiError),
        (status = 422, description = "The statement was refused; the run is FAILED", body = ApiError),
    ))]
pub async fn pull(
    State(engine): State<Engine>,
    Bearer(token): Bearer,
    body: Result<Json<PullRequest>, axum::extract::rejection::JsonRejection>,
) -> Result<(StatusCode, Json<Run>), ApiError> {
    let Json(req) = body.map_err(super::merchant::unreadable)?;
    let run =
        crate::recon::pull_statement(&engine, &req.provider, &req.business_date, &token.actor())
            .await?;
    Ok((StatusCode::CREATED, Json(run.into())))
}

/// `POST /api/v1/recon/settlements` `{"provider", "business_date"}`: the
/// day's balance bill fetched and settled against its trade run, as
/// `reckon recon settle` does.
#[utoipa::path(post, path = "/api/v1/recon/settlements", tag = "reconciliation",
    request_body = PullRequest,
    responses(
        (status = 200, description = "The day's settlement: AGREED, DIFFERS with its tickets opened, or WAITING with the provider's error (no bill yet; the schedule asks again)", body = Settlement),
        (status = 400, description = "Invalid body, an unknown provider, one without a balance bill, or a day with no completed trade run", body = ApiError),
        (status = 422, description = "The balance bill was refused; nothing of it was kept", body = ApiError),
    ))]
pub async fn settle(
    State(engine): State<Engine>,
    _token: Bearer,
    body: Result<Json<PullRequest>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<Settlement>, ApiError> {
    let Json(req) = body.map_err(super::merchant::unreadable)?;
    let row = crate::recon::settle_day(&engine, &req.provider, &req.business_date).await?;
    Ok(Json(row.into()))
}

/// `POST /api/v1/recon/runs/{run_id}/resume`.
#[utoipa::path(post, path = "/api/v1/recon/runs/{run_id}/resume", tag = "reconciliation",
    params(("run_id" = String, Path, max_length = 64, pattern = "^[!-~]+$")),
    responses(
        (status = 200, description = "The run, resumed to its end", body = Run),
        (status = 400, description = "No such run, or it cannot be resumed", body = ApiError),
        (status = 409, description = "Another pull of the day holds its lease (named), or the day is closed; the run was not touched", body = ApiError),
        (status = 422, description = "The statement was refused; the run is FAILED", body = ApiError),
    ))]
pub async fn resume(
    State(engine): State<Engine>,
    _token: Bearer,
    Path(run_id): Path<String>,
) -> Result<Json<Run>, ApiError> {
    Ok(Json(
        crate::recon::resume_run(&engine, &run_id).await?.into(),
    ))
}

/// `GET /api/v1/recon/runs/{run_id}`.
#[utoipa::path(get, path = "/api/v1/recon/runs/{run_id}", tag = "reconciliation",
    params(("run_id" = String, Path, max_length = 64, pattern = "^[!-~]+$")),
    responses(
        (status = 200, description = "The run", body = Run),
        (status = 404, description = "No such run", body = ApiError),
    ))]
pub async fn show(
    State(engine): State<Engine>,
    _token: Bearer,
    Path(run_id): Path<String>,
) -> Result<Json<Run>, ApiError> {
    match crate::recon::find_run(&engine, &run_id)
        .await
        .map_err(ReconError::from)?
    {
        Some(run) => Ok(Json(run.into())),
        None => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("no run {run_id}"),
        )),
    }
}

/// `GET /api/v1/recon/runs/{run_id}/file`: the run's statement as it was
/// uploaded, imported or downloaded, byte for byte.
#[utoipa::path(get, path = "/api/v1/recon/runs/{run_id}/file", tag = "reconciliation",
    params(("run_id" = String, Path, max_length = 64, pattern = "^[!-~]+$")),
    responses(
        (status = 200, description = "The statement file; its SHA-256 (the run's file_hash) in X-Statement-Sha256",
            content_type = "application/octet-stream", body = Vec<u8>),
        (status = 404, description = "No such run, or no file kept for it (a page-by-page pull, or past retention)", body = ApiError),
    ))]
pub async fn file(
    State(engine): State<Engine>,
    Bearer(token): Bearer,
    Path(run_id): Path<String>,
) -> Result<Response, ApiError> {
    match statement_file(&engine, &run_id, &token.actor()).await? {
        Some(file) => Ok(file),
        None => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!(
                "no statement file kept for run {run_id}: a page-by-page pull keeps none, and files past their retention are deleted"
            ),
        )),
    }
}

/// `GET /api/v1/recon/runs/{run_id}/results.csv`: every statement row of
/// a completed run with its outcome, then the records the statement lacked.
#[utoipa::path(get, path = "/api/v1/recon/runs/{run_id}/results.csv", tag = "reconciliation",
    params(("run_id" = String, Path, max_length = 64, pattern = "^[!-~]+$")),
    responses(
        (status = 200, description = "The run's results, streamed: one line per statement row (outcome MATCHED or its ticket's class) and per record Reckon has that the statement lacked (kind local); columns run_id, provider_account, business_date, line_no, kind, provider_txn_id, payment_no, refund_no, amount, amount_minor, fee, fee_minor, currency, provider_status, reckon_status, outcome, matched_by, ticket_id, ticket_severity, ticket_status",
            content_type = "text/csv", body = String),
        (status = 400, description = "The run did not complete, or its statement file is no longer kept", body = ApiError),
        (status = 404, description = "No such run", body = ApiError),
    ))]
pub async fn results_csv(
    State(engine): State<Engine>,
    Bearer(token): Bearer,
    Path(run_id): Path<String>,
) -> Result<Response, ApiError> {
    results_download(&engine, &run_id, Format::Csv, &token.actor()).await
}

/// `GET /api/v1/recon/runs/{run_id}/results.parquet`: the same as a
/// Parquet file.
#[utoipa::path(get, path = "/api/v1/recon/runs/{run_id}/results.parquet", tag = "reconciliation",
    params(("run_id" = String, Path, max_length = 64, pattern = "^[!-~]+$")),
    responses(
        (status = 200, description = "The run's results as a Parquet file (snappy), the CSV's columns: text as UTF8, line_no and the minor units as INT64",
            content_type = "application/vnd.apache.parquet", body = Vec<u8>),
        (status = 400, description = "The run did not complete, or its statement file is no longer kept", body = ApiError),
        (status = 404, description = "No such run", body = ApiError),
    ))]
pub async fn results_parquet(
    State(engine): State<Engine>,
    Bearer(token): Bearer,
    Path(run_id): Path<String>,
) -> Result<Response, ApiError> {
    results_download(&engine, &run_id, Format::Parquet, &token.actor()).await
}

/// A run's results as a download, for the API and the console; each
/// download audited (`results.download`) before it is sent.
pub async fn results_download(
    engine: &Engine,
    run_id: &str,
    format: Format,
    actor: &str,
) -> Result<Response, ApiError> {
    let Some(run) = crate::recon::results_of(engine, run_id).await? else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("no run {run_id}"),
        ));
    };
    let entry = crate::store::audit::Entry {
        actor: actor.to_owned(),
        action: "results.download",
        object_type: "recon_run",
        object_id: run_id.to_owned(),
        before: None,
        after: Some(serde_json::json!({ "format": format.extension() })),
    };
    crate::store::audit::record(&engine.db, &entry, engine.now())
        .await
        .map_err(ReconError::from)?;
    let pieces = crate::console::run_export::stream(engine.clone(), run, format);
    let name = format!(
        "reckon-run-{}.{}",
        safe_file_name(run_id),
        format.extension()
    );
    let headers = [
        (header::CONTENT_TYPE, format.content_type().to_owned()),
        (
            header::CONTENT_DISPOSITION,
            format!("attachment; filename=\"{name}\""),
        ),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_owned()),
    ];
    Ok((headers, super::channel_body(pieces)).into_response())
}

/// The run's kept statement as a download, for the API and the console;
/// each download audited (`statement.download`) before it is sent.
pub async fn statement_file(
    engine: &Engine,
    run_id: &str,
    actor: &str,
) -> Result<Option<Response>, ReconError> {
    if crate::recon::find_run(engine, run_id).await?.is_none() {
        return Ok(None);
    }
    let Some((name, sha256, bytes)) = crate::recon::kept_file(engine, run_id).await? else {
        return Ok(None);
    };
    let entry = crate::store::audit::Entry {
        actor: actor.to_owned(),
        action: "statement.download",
        object_type: "recon_run",
        object_id: run_id.to_owned(),
        before: None,
        after: Some(
            serde_json::json!({ "file_name": name, "sha256": sha256, "bytes": bytes.len() }),
        ),
    };
    crate::store::audit::record(&engine.db, &entry, engine.now()).await?;
    let safe = safe_file_name(&name);
    let headers = [
        (header::CONTENT_TYPE, "application/octet-stream".to_owned()),
        (
            header::CONTENT_DISPOSITION,
            format!("attachment; filename=\"{safe}\""),
        ),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_owned()),
        (HeaderName::from_static("x-statement-sha256"), sha256),
    ];
    Ok(Some((headers, bytes).into_response()))
}

/// A file's name fit for a Content-Disposition header.
pub(super) fn safe_file_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || ".-_".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
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
pub async fn days(
    State(engine): State<Engine>,
    _token: Bearer,
    Query(q): Query<Days>,
) -> Result<Json<DayList>, ApiError> {
    for d in [&q.from, &q.to] {
        if d.parse::<jiff::civil::Date>().is_err() {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                format!("{} is not YYYY-MM-DD", crate::domain::quote(d)),
            ));
        }
    }
    let days = crate::recon::recon_days(&engine, &q.from, &q.to)
        .await
        .map_err(ReconError::from)?;
    Ok(Json(DayList { days }))
}

/// `GET /api/v1/disputes`: which disputes are listed.
#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DisputesQuery {
    /// Only this provider account's.
    provider: Option<String>,
    /// Only those in this status: INQUIRY, OPEN, EVIDENCE_SUBMITTED, WON,
    /// LOST or INQUIRY_CLOSED.
    status: Option<String>,
}

/// Disputes, newest opened first (at most 500).
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct DisputeList {
    disputes: Vec<super::api_types::Dispute>,
}

/// `GET /api/v1/disputes?provider=…&status=…`.
#[utoipa::path(get, path = "/api/v1/disputes", tag = "reconciliation",
    params(DisputesQuery),
    responses(
        (status = 200, description = "The providers' disputes, newest opened first (at most 500), with the money each moved", body = DisputeList),
        (status = 400, description = "A status that is not a dispute status", body = ApiError),
    ))]
pub async fn disputes(
    State(engine): State<Engine>,
    _token: Bearer,
    Query(q): Query<DisputesQuery>,
) -> Result<Json<DisputeList>, ApiError> {
    let status = q.status.as_deref().map(str::trim).filter(|s| !s.is_empty());
    if let Some(s) = status
        && s.parse::<crate::domain::DisputeStatus>().is_err()
    {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            format!(
                "status {}: expected one of INQUIRY, OPEN, EVIDENCE_SUBMITTED, WON, LOST, INQUIRY_CLOSED",
                crate::domain::quote(s)
            ),
        ));
    }
    let provider = q
        .provider
        .as_deref()
        .map(str::trim)
        .filter(|p| !p.is_empty());
    let db = &engine.db;
    let rows = crate::store::disputes::list(&db.pool, db.kind, provider, status)
        .await
        .map_err(ReconError::from)?;
    Ok(Json(DisputeList {
        disputes: rows.into_iter().map(Into::into).collect(),
    }))
}

/// The latest signed close record of a provider's day as a download, for
/// the API and the console; None when the day was never closed.
pub async fn close_file(
    engine: &Engine,
    provider: &str,
    date: &str,
) -> Result<Option<Response>, ReconError> {
    let (Some(close), _) = crate::recon::day_close(engine, provider, date).await? else {
        return Ok(None);
    };
    let text =
        serde_json::to_string_pretty(&crate::recon::close_report(&close)).unwrap_or_default();
    let name = safe_file_name(&format!(
        "reckon-close-{provider}-{date}-{}.json",
        close.seq
    ));
    let headers = [
        (header::CONTENT_TYPE, "application/json".to_owned()),
        (
            header::CONTENT_DISPOSITION,
            format!("attachment; filename=\"{name}\""),
        ),
        (
            HeaderName::from_static("x-close-state"),
            close.state.clone(),
        ),
    ];
    Ok(Some((headers, text).into_response()))
}

/// `GET /api/v1/recon/closes/{provider}/{date}`: the day's latest close
/// as a signed JSON report (`report`, its `hash`, the `signature`); the
/// record's state now (CLOSED, or REOPENED since) in X-Close-State.
#[utoipa::path(get, path = "/api/v1/recon/closes/{provider}/{date}", tag = "reconciliation",
    params(
        ("provider" = String, Path, max_length = 32),
        ("date" = String, Path, format = Date),
    ),
    responses(
        (status = 200, description = "The signed close report", content_type = "application/json", body = Object),
        (status = 404, description = "The day was never closed", body = ApiError),
    ))]
pub async fn close_report(
    State(engine): State<Engine>,
    _token: Bearer,
    Path((provider, date)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    match close_file(&engine, &provider, &date).await? {
        Some(file) => Ok(file),
        None => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("{provider}'s day {date} was never closed"),
        )),
    }
}

/// `POST /api/v1/recon/closes/verify` with a report as downloaded: is it
/// unaltered and signed by this server's audit key, recorded here, and
/// chained to the close before it?
#[utoipa::path(post, path = "/api/v1/recon/closes/verify", tag = "reconciliation",
    request_body(content = Object, description = "A close report as `GET /api/v1/recon/closes/{provider}/{date}` gives it"),
    responses(
        (status = 200, description = "What the check found", body = crate::recon::Verified),
        (status = 400, description = "The body is not JSON", body = ApiError),
    ))]
pub async fn verify_close(
    State(engine): State<Engine>,
    _token: Bearer,
    body: Result<Json<serde_json::Value>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<crate::recon::Verified>, ApiError> {
    let Json(doc) = body.map_err(super::merchant::unreadable)?;
    let verified = crate::recon::verify_close(&engine, &doc)
        .await
        .map_err(ReconError::from)?;
    Ok(Json(verified))
}
