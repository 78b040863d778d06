//! Console routes that are not server functions: the streamed CSV export
//! of a filtered ticket list, and evidence files (a multipart upload that
//! works without JavaScript, and the download). Signed-in users only, by
//! the same session cookie as the pages.

use super::AppState;
use crate::triage::Desk;
use app::ERROR_PARAM;
use app::error::AppError;
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
        if let Err(e) = crate::triage::export_csv(&db, &filter, tx.clone()).await {
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
    let desk = Desk::new(state.engine.clone());
    match desk.add_file(&user, &ticket, &name, &kind, &bytes).await {
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
    let desk = Desk::new(state.engine.clone());
    match desk.file(&note).await {
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
