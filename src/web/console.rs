//! Console routes that are not server functions: the streamed CSV export
//! of a filtered ticket list, evidence files (a multipart upload that
//! works without JavaScript, and the download), the statement upload and
//! a run's statement file.
//! Signed-in users only, by the same session cookie as the pages.

use super::recon::{UPLOAD_LIMIT, UPLOAD_TIME};
use super::sessions::Store;
use super::upload::{self, FormError};
use super::{AppState, same_origin};
use crate::accounts::internal;
use crate::console::run_export::Format;
use crate::recon::{Import, ReconError};
use app::error::AppError;
use app::filter::QueryFilter;
use app::tickets::{EVIDENCE_FILE_LIMIT, TicketFilter};
use app::types::User;
use axum::Router;
use axum::extract::{DefaultBodyLimit, FromRequestParts, Multipart, Path, Query, State};
use axum::http::{StatusCode, header, request::Parts};
use axum::middleware;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::timeout::TimeoutLayer;
use tower_sessions::{Session, SessionManagerLayer};

/// The export and the download, under the console's layers.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/tickets.csv", get(export))
        .route("/evidence/{note_id}", get(download_evidence))
        .route("/runs/{run_id}/file", get(download_statement))
        .route("/runs/{run_id}/results.csv", get(download_results_csv))
        .route(
            "/runs/{run_id}/results.parquet",
            get(download_results_parquet),
        )
        .route("/closes/{provider}/{date}", get(download_close))
}

/// `GET /closes/{provider}/{date}`: the day's signed close report.
pub async fn download_close(
    State(state): State<AppState>,
    Signed(_user): Signed,
    Path((provider, date)): Path<(String, String)>,
) -> Response {
    match super::recon::close_file(&state.engine, &provider, &date).await {
        Ok(Some(file)) => file,
        Ok(None) => (StatusCode::NOT_FOUND, "this day was never closed").into_response(),
        Err(e) => {
            tracing::error!(provider, date, error = %e, "a close report could not be read");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "could not read the close",
            )
                .into_response()
        }
    }
}

/// The uploads: larger than a form, so each has its own limits; the
/// console's session and origin checks.
pub fn upload_router(state: AppState, sessions: SessionManagerLayer<Store>) -> Router {
    // Evidence files: a few MiB at most.
    let evidence = Router::new()
        .route("/tickets/{id}/evidence", post(upload_evidence))
        .layer(sessions.clone())
        .layer(middleware::from_fn(same_origin))
        .layer(DefaultBodyLimit::max(EVIDENCE_FILE_LIMIT + 16 * 1024))
        .layer(RequestBodyLimitLayer::new(EVIDENCE_FILE_LIMIT + 32 * 1024))
        .with_state(state.clone());
    // A statement: the statement limits.
    let statement = Router::new()
        .route("/runs/upload", post(upload_statement))
        .layer(sessions)
        .layer(middleware::from_fn(same_origin))
        .layer(DefaultBodyLimit::max(UPLOAD_LIMIT))
        .layer(RequestBodyLimitLayer::new(UPLOAD_LIMIT + 64 * 1024))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            UPLOAD_TIME,
        ))
        .with_state(state);
    evidence.merge(statement)
}

/// The signed-in, enabled user of a console request: the same check as
/// the pages' (a live session in the register).
pub struct Signed(pub User);

impl FromRequestParts<AppState> for Signed {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let denied = || (StatusCode::UNAUTHORIZED, "sign in to the console first").into_response();
        let session = Session::from_request_parts(parts, state)
            .await
            .map_err(|_| denied())?;
        let backend: app::ssr::SharedBackend = std::sync::Arc::new(state.accounts.clone());
        match app::ssr::signed_in(&backend, &session).await {
            Ok(Some(user)) => Ok(Signed(user)),
            _ => Err(denied()),
        }
    }
}

/// `GET /tickets.csv?<the list's filters>`: every matching ticket, streamed.
pub async fn export(
    State(state): State<AppState>,
    Signed(user): Signed,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Response {
    let mut filter = TicketFilter::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    filter.after = None;
    let entry = crate::store::audit::Entry {
        actor: user.username.clone(),
        action: "export.download",
        object_type: "export",
        object_id: "tickets.csv".into(),
        before: None,
        after: Some(serde_json::json!({ "filter": pairs })),
    };
    if let Err(e) = crate::store::audit::record(&state.engine.db, &entry, state.engine.now()).await
    {
        tracing::error!(error = %e, "ticket export not audited, so not sent");
        return (StatusCode::INTERNAL_SERVER_ERROR, "could not export").into_response();
    }
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    let db = state.engine.db.clone();
    let now = state.engine.now();
    tokio::spawn(async move {
        if let Err(e) = crate::console::export_csv(&db, &filter, now, tx.clone()).await {
            tracing::error!(error = %e, "ticket export failed midway");
            let _ = tx.send(Err(std::io::Error::other("export failed"))).await;
        }
    });
    tracing::info!(user = %user.username, "ticket export");
    (
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8"),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"reckon-tickets.csv\"",
            ),
        ],
        super::channel_body(rx),
    )
        .into_response()
}

/// Back to the ticket page, with the error in the address if there was one.
fn back(ticket: &str, err: Option<&AppError>) -> Response {
    let mut to = format!("/tickets/{}", app::tickets::encode(ticket));
    if let Some(err) = err {
        to.push('?');
        to.push_str(&app::ssr::error_query(err));
    }
    Redirect::to(&to).into_response()
}

/// `POST /tickets/{id}/evidence`, multipart with one `file`.
pub async fn upload_evidence(
    State(state): State<AppState>,
    Signed(user): Signed,
    Path(ticket): Path<String>,
    mut form: Multipart,
) -> Response {
    if !app::api::WORK.contains(&user.role) {
        return back(&ticket, Some(&AppError::Forbidden));
    }
    let mut file: Option<(String, String, Vec<u8>)> = None;
    loop {
        match form.next_field().await {
            Ok(Some(field)) if field.name() == Some("file") => {
                let name = field.file_name().unwrap_or("evidence").to_owned();
                let kind = field
                    .content_type()
                    .unwrap_or("application/octet-stream")
                    .to_owned();
                match field.bytes().await {
                    Ok(bytes) => file = Some((name, kind, bytes.to_vec())),
                    Err(_) => {
                        return back(
                            &ticket,
                            Some(&AppError::FileTooLarge {
                                max_kib: (EVIDENCE_FILE_LIMIT / 1024) as u64,
                            }),
                        );
                    }
                }
            }
            Ok(Some(_)) => continue,
            Ok(None) => break,
            Err(_) => {
                return back(
                    &ticket,
                    Some(&AppError::FileTooLarge {
                        max_kib: (EVIDENCE_FILE_LIMIT / 1024) as u64,
                    }),
                );
            }
        }
    }
    let Some((name, kind, bytes)) = file.filter(|f| !f.2.is_empty()) else {
        return back(
            &ticket,
            Some(&AppError::Required {
                field: "file".into(),
            }),
        );
    };
    match crate::triage::add_file(&state.engine, &user, &ticket, &name, &kind, &bytes).await {
        Ok(()) => back(&ticket, None),
        Err(e) => back(&ticket, Some(&e)),
    }
}

/// `GET /evidence/{note_id}`: the file, always as a download (never
/// rendered inline, whatever it claims to be).
pub async fn download_evidence(
    State(state): State<AppState>,
    Signed(user): Signed,
    Path(note): Path<String>,
) -> Response {
    match crate::console::evidence_file(&state.engine.db, &note).await {
        Ok((name, bytes)) => {
            let entry = crate::store::audit::Entry {
                actor: user.username.clone(),
                action: "evidence.download",
                object_type: "ticket_note",
                object_id: note.clone(),
                before: None,
                after: Some(serde_json::json!({ "file_name": name, "bytes": bytes.len() })),
            };
            if let Err(e) =
                crate::store::audit::record(&state.engine.db, &entry, state.engine.now()).await
            {
                tracing::error!(error = %e, "evidence download not audited, so not sent");
                return (StatusCode::INTERNAL_SERVER_ERROR, "could not read the file")
                    .into_response();
            }
            let safe = super::recon::safe_file_name(&name);
            (
                [
                    (header::CONTENT_TYPE, "application/octet-stream".to_owned()),
                    (
                        header::CONTENT_DISPOSITION,
                        format!("attachment; filename=\"{safe}\""),
                    ),
                    (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_owned()),
                ],
                bytes,
            )
                .into_response()
        }
        Err(AppError::NotFound) => (StatusCode::NOT_FOUND, "no such file").into_response(),
        Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "could not read the file").into_response(),
    }
}

/// `GET /runs/{run_id}/file`: the run's statement as it was received.
pub async fn download_statement(
    State(state): State<AppState>,
    Signed(user): Signed,
    Path(run_id): Path<String>,
) -> Response {
    match super::recon::statement_file(&state.engine, &run_id, &user.username).await {
        Ok(Some(file)) => file,
        Ok(None) => (StatusCode::NOT_FOUND, "no statement file kept for this run").into_response(),
        Err(e) => {
            tracing::error!(run_id, error = %e, "a statement file could not be read");
            (StatusCode::INTERNAL_SERVER_ERROR, "could not read the file").into_response()
        }
    }
}

/// `GET /runs/{run_id}/results.csv`: the run's results, row by row.
pub async fn download_results_csv(
    State(state): State<AppState>,
    Signed(user): Signed,
    Path(run_id): Path<String>,
) -> Response {
    download_results(&state, &user.username, &run_id, Format::Csv).await
}

/// `GET /runs/{run_id}/results.parquet`: the same as a Parquet file.
pub async fn download_results_parquet(
    State(state): State<AppState>,
    Signed(user): Signed,
    Path(run_id): Path<String>,
) -> Response {
    download_results(&state, &user.username, &run_id, Format::Parquet).await
}

async fn download_results(state: &AppState, who: &str, run_id: &str, format: Format) -> Response {
    match super::recon::results_download(&state.engine, run_id, format, who).await {
        Ok(file) => file,
        Err(e) => e.into_response(),
    }
}

/// Back to the runs page, showing `run`, or with the error.
fn back_to_runs(run: Option<&str>, err: Option<&AppError>) -> Response {
    let mut to = "/runs".to_owned();
    if let Some(run) = run {
        to.push_str(&format!("?run={}", app::tickets::encode(run)));
    }
    if let Some(err) = err {
        to.push(if run.is_some() { '&' } else { '?' });
        to.push_str(&app::ssr::error_query(err));
    }
    Redirect::to(&to).into_response()
}

/// A statement upload the console has read, held for its import.
struct Upload {
    provider: String,
    date: String,
    file: upload::KeptFile,
    who: String,
    accept_bad_lines: u32,
    run_id: String,
}

impl Upload {
    /// The upload as an import (the file stays the upload's).
    fn import(&self) -> Import<'_> {
        Import {
            provider: &self.provider,
            business_date: &self.date,
            source: "upload",
            file_name: self.file.name.as_deref(),
            input: self.file.input(),
            started_by: &self.who,
            accept_bad_lines: self.accept_bad_lines,
            run_id: Some(self.run_id.clone()),
            hash: Some(self.file.hash.clone()),
        }
    }
}

/// `POST /runs/upload`, multipart: `provider`, `business_date`, `file`,
/// optionally `accept_bad_lines` ([`upload`]). The file is kept in a
/// temporary file, the run starts in the background and the runs page
/// follows its progress; the same file for the same day again shows the
/// earlier run, saying so; another provider's bill is refused, named, and
/// starts no run.
pub async fn upload_statement(
    State(state): State<AppState>,
    Signed(user): Signed,
    form: Multipart,
) -> Response {
    if !app::api::WORK.contains(&user.role) {
        return back_to_runs(None, Some(&AppError::Forbidden));
    }
    let bad = |detail: String| back_to_runs(None, Some(&AppError::Invalid { detail }));
    let form = match upload::read(form).await {
        Ok(form) => form,
        Err(e) => {
            return match e {
                FormError::Unreadable(e) => bad(format!("unreadable form: {e}")),
                FormError::FileBroken(e) => bad(format!("the upload broke off: {e}")),
                FormError::NotKept(e) => back_to_runs(None, Some(&internal(e))),
                refused => bad(refused.field_message().unwrap_or_default()),
            };
        }
    };
    let (Some(provider), Some(date)) = (form.provider, form.business_date) else {
        return bad("provider and business day are required".into());
    };
    let Some(file) = form.file.filter(|f| f.size > 0) else {
        return bad("the statement file is empty".into());
    };
    let upload = Upload {
        provider: provider.trim().to_owned(),
        date: date.trim().to_owned(),
        file,
        who: user.username.clone(),
        accept_bad_lines: form.accept_bad_lines,
        run_id: crate::recon::new_run_id(),
    };
    // The import's own checks, in the statement's zone, answered now: the
    // run itself goes on in the background.
    let engine = state.engine.clone();
    match crate::recon::check_import(&engine, &upload.import()).await {
        Ok(None) => {}
        Ok(Some(run)) => {
            let said = AppError::Invalid {
                detail: run.note.clone().unwrap_or_default(),
            };
            return back_to_runs(Some(&run.run_id), Some(&said));
        }
        Err(ReconError::Store(e)) => return back_to_runs(None, Some(&internal(e))),
        Err(refused) => return bad(refused.to_string()),
    }
    let run_id = upload.run_id.clone();
    tokio::spawn(async move {
        if let Err(e) = crate::recon::import_statement(&engine, upload.import()).await {
            tracing::warn!(run_id = %upload.run_id, error = %e, "uploaded statement refused");
        }
    });
    back_to_runs(Some(&run_id), None)
}
