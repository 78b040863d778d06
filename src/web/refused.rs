//! Refused webhooks read through the API (Bearer API token), as the
//! console's `/refused` page shows them: newest first in keyset pages, with
//! the counts per reason per hour of the last 24 hours, and one with its
//! headers masked.

use super::api_error::ApiError;
use super::bearer::Bearer;
use crate::console::Desk;
use crate::engine::Engine;
use app::error::AppError;
use app::refused::{RefusedDetail, RefusedFilter, RefusedPage, RefusedSummary};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};

pub fn router() -> Router<super::AppState> {
    Router::new()
        .route("/api/v1/refused", get(list))
        .route("/api/v1/refused/{id}", get(show))
}

/// The list's filters, each optional.
#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RefusedQuery {
    /// A provider account's name.
    #[param(example = "stripe-eu")]
    provider: Option<String>,
    /// unverified, malformed, content_type or too_large.
    #[param(example = "unverified")]
    kind: Option<String>,
    /// timestamp_skew, unknown_serial, retired_secret, body_changed or
    /// body_seen_verified.
    #[param(example = "retired_secret")]
    diagnosis: Option<String>,
    /// Received from this business day on, YYYY-MM-DD.
    #[param(example = "2026-11-01", format = Date)]
    from: Option<String>,
    /// Received up to this business day, inclusive, YYYY-MM-DD.
    #[param(example = "2026-11-30", format = Date)]
    to: Option<String>,
    /// The `next` of the page before.
    after: Option<String>,
}

/// A refused webhook in a list.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct RefusedItem {
    pub id: String,
    pub provider: String,
    /// unverified | malformed | content_type | too_large
    pub kind: String,
    pub reason: String,
    /// The peer address the server saw.
    pub source_addr: Option<String>,
    /// The likely cause, when the failure tells one.
    pub diagnosis: Option<String>,
    /// The diagnosis for people: the cause and what to do.
    pub diagnosis_detail: Option<String>,
    /// What the unverified body claims (not trusted).
    pub payment_no: Option<String>,
    pub body_len: i64,
    pub trace_id: String,
    /// Microseconds since the epoch, UTC.
    pub received_at: i64,
}

impl From<RefusedSummary> for RefusedItem {
    fn from(s: RefusedSummary) -> RefusedItem {
        RefusedItem {
            id: s.id,
            provider: s.provider,
            kind: s.kind,
            reason: s.reason,
            source_addr: s.source_addr,
            diagnosis: s.diagnosis,
            diagnosis_detail: s.diagnosis_detail,
            payment_no: s.payment_no,
            body_len: s.body_len,
            trace_id: s.trace_id,
            received_at: s.received_at,
        }
    }
}

/// Refusals of one hour for one reason (the diagnosis, else the kind).
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct HourCountView {
    /// The hour's start, microseconds since the epoch.
    pub hour: i64,
    pub reason: String,
    pub count: i64,
}

#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct RefusedList {
    pub items: Vec<RefusedItem>,
    /// Pass as `after` for the next page; absent on the last.
    pub next: Option<String>,
    /// The last 24 hours, newest hour first.
    pub hourly: Vec<HourCountView>,
}

impl From<RefusedPage> for RefusedList {
    fn from(p: RefusedPage) -> RefusedList {
        RefusedList {
            items: p.items.into_iter().map(RefusedItem::from).collect(),
            next: p.next,
            hourly: p
                .hourly
                .into_iter()
                .map(|h| HourCountView {
                    hour: h.hour,
                    reason: h.reason,
                    count: h.count,
                })
                .collect(),
        }
    }
}

/// One refused webhook with its headers (signatures and secrets shortened)
/// and the first bytes of its body (masked).
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct RefusedView {
    #[serde(flatten)]
    pub item: RefusedItem,
    /// (name, value) pairs.
    pub headers: Vec<(String, String)>,
    pub body: String,
    pub body_hash: String,
}

impl From<RefusedDetail> for RefusedView {
    fn from(d: RefusedDetail) -> RefusedView {
        RefusedView {
            item: d.summary.into(),
            headers: d.headers,
            body: d.body,
            body_hash: d.body_hash,
        }
    }
}

fn api_error(e: AppError) -> ApiError {
    match e {
        AppError::Invalid { detail } => ApiError::new(StatusCode::BAD_REQUEST, detail),
        AppError::NotFound => ApiError::new(StatusCode::NOT_FOUND, "no such refused webhook"),
        e => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// `GET /api/v1/refused`: refused webhooks, newest first.
#[utoipa::path(get, path = "/api/v1/refused", tag = "webhooks",
    params(RefusedQuery),
    responses(
        (status = 200, description = "A page of refused webhooks (50), newest first, and the counts per reason per hour of the last 24 hours", body = RefusedList),
        (status = 400, description = "A day that is not YYYY-MM-DD", body = ApiError),
    ))]
pub async fn list(
    State(engine): State<Engine>,
    _token: Bearer,
    Query(q): Query<RefusedQuery>,
) -> Result<Json<RefusedList>, ApiError> {
    use app::filter::QueryFilter;
    let filter = RefusedFilter {
        provider: q.provider,
        kind: q.kind,
        diagnosis: q.diagnosis,
        from: q.from,
        to: q.to,
        after: q.after,
    }
    .cleaned();
    let page = Desk::new(engine)
        .refused_page(&filter)
        .await
        .map_err(api_error)?;
    Ok(Json(page.into()))
}

/// `GET /api/v1/refused/{id}`.
#[utoipa::path(get, path = "/api/v1/refused/{id}", tag = "webhooks",
    params(("id" = String, Path, max_length = 64, pattern = "^[!-~]+$")),
    responses(
        (status = 200, description = "The refused webhook with its masked headers and body excerpt", body = RefusedView),
        (status = 404, description = "No such refused webhook", body = ApiError),
    ))]
pub async fn show(
    State(engine): State<Engine>,
    _token: Bearer,
    Path(id): Path<String>,
) -> Result<Json<RefusedView>, ApiError> {
    let detail = Desk::new(engine)
        .refused_detail(&id)
        .await
        .map_err(api_error)?;
    Ok(Json(detail.into()))
}
