//! Console routes that are not server functions: the streamed CSV export
//! of a filtered ticket list, and evidence files (a multipart upload that
//! works without JavaScript, and the download). Signed-in users only, by
//! the same session cookie as the pages.

use super::AppState;
use app::ERROR_PARAM;
use app::error::AppError;
use app::filter::QueryFilter;
use app::tickets::{EVIDENCE_FILE_LIMIT, TicketFilter};
use app::types::User;
use axum::body::Body;
use axum::extract::{FromRequestParts, Multipart, Path, Query, State};
use axum::http::{StatusCode, header, request::Parts};
use axum::response::{IntoResponse, Redirect, Response};
use tower_sessions::Session;

/// The signed-in, enabled user of a console request.
pub struct Signed(pub User);

impl FromRequestParts<AppState> for Signed {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let denied = || (StatusCode::UNAUTHORIZED, "sign in to the console first").into_response();
        let session = Session::from_request_parts(parts, state)
            .await
            .map_err(|_| denied())?;
        let id: Option<String> = session
            .get(app::ssr::SESSION_USER)
            .await
            .map_err(|_| denied())?;
        let Some(id) = id else { return Err(denied()) };
        match state.accounts.user(&id).await {
            Ok(Some(user)) if !user.disabled => Ok(Signed(user)),
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
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    let db = state.engine.db.clone();
    tokio::spawn(async move {
        if let Err(e) = crate::console::export_csv(&db, &filter, tx.clone()).await {
            tracing::error!(error = %e, "ticket export failed midway");
            let _ = tx.send(Err(std::io::Error::other("export failed"))).await;
        }
    });
    tracing::info!(user = %user.username, "ticket export");
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    (
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8"),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"reckon-tickets.csv\"",
            ),
        ],
        Body::from_stream(stream),
    )
        .into_response()
}

/// Back to the ticket page, with the error in the address if there was one.
fn back(ticket: &str, err: Option<&AppError>) -> Response {
    let mut to = format!("/tickets/{}", app::tickets::encode(ticket));
    if let Some(err) = err
        && let Ok(json) = serde_json::to_string(err)
    {
        to.push_str(&format!("?{ERROR_PARAM}={}", app::tickets::encode(&json)));
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
    Signed(_user): Signed,
    Path(note): Path<String>,
) -> Response {
    match crate::console::evidence_file(&state.engine.db, &note).await {
        Ok((name, bytes)) => {
            let safe: String = name
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || ".-_".contains(c) {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
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

/// A temporary file removed when dropped.
struct TempFile(Option<std::path::PathBuf>);

impl Drop for TempFile {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Back to the runs page, showing `run`, or with the error.
fn back_to_runs(run: Option<&str>, err: Option<&AppError>) -> Response {
    let mut to = "/runs".to_owned();
    if let Some(run) = run {
        to.push_str(&format!("?run={}", app::tickets::encode(run)));
    }
    if let Some(err) = err
        && let Ok(json) = serde_json::to_string(err)
    {
        to.push_str(if run.is_some() { "&" } else { "?" });
        to.push_str(&format!("{ERROR_PARAM}={}", app::tickets::encode(&json)));
    }
    Redirect::to(&to).into_response()
}

/// `POST /runs/upload`, multipart: `provider`, `business_date`, `file`,
/// optionally `accept_bad_lines`. The file is kept in a temporary file, the
/// run starts in the background and the runs page follows its progress; the
/// same file for the same day again shows the earlier run.
pub async fn upload_statement(
    State(state): State<AppState>,
    Signed(user): Signed,
    mut form: Multipart,
) -> Response {
    use crate::recon::{Import, Input};
    use std::io::Write;
    if !app::api::WORK.contains(&user.role) {
        return back_to_runs(None, Some(&AppError::Forbidden));
    }
    let bad = |detail: String| back_to_runs(None, Some(&AppError::Invalid { detail }));
    let (mut provider, mut date, mut name, mut tolerance) = (None, None, None, 0u32);
    let path = std::env::temp_dir().join(format!("reckon-upload-{}", uuid::Uuid::new_v4()));
    // Whatever happens below, the kept file goes unless the import takes it.
    let mut guard = TempFile(Some(path.clone()));
    let mut size = 0usize;
    let mut hash = crate::recon::StatementHash::default();
    loop {
        let mut field = match form.next_field().await {
            Ok(Some(f)) => f,
            Ok(None) => break,
            Err(e) => return bad(format!("unreadable form: {e}")),
        };
        match field.name().unwrap_or_default() {
            "provider" => provider = field.text().await.ok(),
            "business_date" => date = field.text().await.ok(),
            "accept_bad_lines" => {
                tolerance = field
                    .text()
                    .await
                    .ok()
                    .and_then(|t| t.trim().parse().ok())
                    .unwrap_or(0)
            }
            "file" => {
                name = field.file_name().map(str::to_owned);
                size = 0;
                hash = crate::recon::StatementHash::default();
                let Ok(mut out) = std::fs::File::create(&path) else {
                    return bad("cannot keep the upload".into());
                };
                loop {
                    match field.chunk().await {
                        Ok(Some(chunk)) => {
                            size += chunk.len();
                            hash.update(&chunk);
                            if out.write_all(&chunk).is_err() {
                                return bad("cannot keep the upload".into());
                            }
                        }
                        Ok(None) => break,
                        Err(e) => return bad(format!("the upload broke off: {e}")),
                    }
                }
            }
            _ => {}
        }
    }
    let (Some(provider), Some(date)) = (provider, date) else {
        return bad("provider and business day are required".into());
    };
    let (provider, date) = (provider.trim().to_owned(), date.trim().to_owned());
    if size == 0 {
        return bad("the statement file is empty".into());
    }
    let engine = state.engine.clone();
    match engine.providers.get(&provider) {
        Some(p) if p.statement_format().is_some() => {}
        _ => return bad(format!("{provider} has no statement Reckon reads")),
    }
    if let Err(e) = crate::recon::day_range(&date, &engine.settings.timezone) {
        return bad(e);
    }
    let input = Input::File(path.clone());
    let hash = hash.finish();
    match engine.earlier_run(&provider, &date, &hash).await {
        Ok(Some(run)) => return back_to_runs(Some(&run.run_id), None),
        Ok(None) => {}
        Err(e) => {
            tracing::error!(error = %e, "earlier run lookup failed");
            return bad("storage error".into());
        }
    }
    let run_id = crate::recon::new_run_id();
    let (id, who) = (run_id.clone(), user.username.clone());
    let file = guard.0.take();
    tokio::spawn(async move {
        let _file = TempFile(file);
        let imp = Import {
            provider: &provider,
            business_date: &date,
            source: "upload",
            file_name: name.as_deref(),
            input,
            started_by: &who,
            accept_bad_lines: tolerance,
            run_id: Some(id.clone()),
            hash: Some(hash),
        };
        if let Err(e) = engine.import_statement(imp).await {
            tracing::warn!(run_id = %id, error = %e, "uploaded statement refused");
        }
    });
    back_to_runs(Some(&run_id), None)
}
