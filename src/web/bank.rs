//! The bank side's API under `/api/v1/bank/` (Bearer API token): import a
//! bank statement (camt.053, MT940, BAI2 or CSV), list the statements and the payouts
//! with their match state, run a matching pass now, and the cash expected
//! at the bank per day.

use super::AppState;
use super::api_error::ApiError;
use super::api_types::{BankStatement, Imported, Payout};
use super::bearer::Bearer;
use crate::bank::cash::ExpectedCash;
use crate::bank::{self, BankError, BankImport, MatchFigures};
use crate::engine::Engine;
use axum::extract::{DefaultBodyLimit, Multipart, Query, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use tower_http::limit::RequestBodyLimitLayer;

/// Largest bank statement accepted (a year of a busy account's camt.053
/// is a few MiB).
pub const UPLOAD_LIMIT: usize = 16 * 1024 * 1024;

/// How many statements or payouts a list gives.
const LIST_LIMIT: i64 = 200;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/bank/statements", get(statements))
        .route("/api/v1/bank/payouts", get(payouts))
        .route("/api/v1/bank/match", post(run_match))
        .route("/api/v1/bank/expected", get(expected))
}

/// The upload, with its own body limit.
pub fn upload_router(state: AppState) -> Router {
    Router::new()
        .route("/api/v1/bank/statements", post(upload))
        .layer(DefaultBodyLimit::max(UPLOAD_LIMIT))
        .layer(RequestBodyLimitLayer::new(UPLOAD_LIMIT + 64 * 1024))
        .with_state(state)
}

impl From<BankError> for ApiError {
    fn from(e: BankError) -> ApiError {
        match e {
            BankError::Refused(m) => ApiError::new(StatusCode::BAD_REQUEST, m),
            BankError::Store(e) => {
                tracing::error!(error = %e, "bank storage error");
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "storage error")
            }
        }
    }
}

/// The form `POST /api/v1/bank/statements` reads.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub struct BankUploadForm {
    /// The bank's statement: camt.053 XML, SWIFT MT940, BAI2 or CSV, at
    /// most 16 MiB.
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
    /// `camt053`, `mt940`, `bai2` or `csv`; when absent, told by the
    /// content: XML is camt.053, `:20:`/`:25:` fields MT940, a first record
    /// `01,` BAI2, anything else CSV.
    #[schema(required = false, example = "camt053")]
    format: String,
    /// For a CSV: which header holds each field, `field=Header;…` over the
    /// default `date,amount,currency,reference,counterparty,direction`.
    #[schema(
        required = false,
        example = "date=Buchungstag;amount=Betrag;direction=Soll/Haben"
    )]
    csv_columns: String,
}

/// `POST /api/v1/bank/statements`, multipart `file`, optionally `format`
/// and `csv_columns`.
#[utoipa::path(post, path = "/api/v1/bank/statements", tag = "bank",
    request_body(content = BankUploadForm, content_type = "multipart/form-data"),
    responses(
        (status = 201, description = "The statement, stored, and what the matching pass after it decided", body = Imported),
        (status = 200, description = "The same file was imported before: nothing changed", body = Imported),
        (status = 400, description = "An unreadable form or statement (named); nothing was stored", body = ApiError),
    ))]
pub async fn upload(
    State(engine): State<Engine>,
    Bearer(token): Bearer,
    mut form: Multipart,
) -> Result<(StatusCode, Json<Imported>), ApiError> {
    let form = read_form(&mut form)
        .await
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, e))?;
    let actor = token.actor();
    let imported = bank::import(&engine, form.import(&actor)).await?;
    let status = if imported.duplicate {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Ok((status, Json(imported.into())))
}

/// A bank statement upload's fields, read the same for the API and the
/// console.
struct BankForm {
    file: axum::body::Bytes,
    name: Option<String>,
    format: Option<String>,
    columns: Option<String>,
}

impl BankForm {
    fn import<'a>(&'a self, actor: &'a str) -> BankImport<'a> {
        BankImport {
            bytes: &self.file,
            file_name: self.name.as_deref(),
            format: self.format.as_deref().filter(|f| !f.trim().is_empty()),
            csv_columns: self.columns.as_deref().filter(|c| !c.trim().is_empty()),
            actor,
        }
    }
}

/// `file`, optionally `format` and `csv_columns`; any other field, or no
/// file, is refused with the reason.
async fn read_form(form: &mut Multipart) -> Result<BankForm, String> {
    let unreadable = |e: axum::extract::multipart::MultipartError| format!("unreadable form: {e}");
    let (mut file, mut name, mut format, mut columns) = (None, None, None, None);
    while let Some(field) = form.next_field().await.map_err(unreadable)? {
        match field.name().unwrap_or("") {
            "file" => {
                name = field.file_name().map(str::to_owned);
                file = Some(field.bytes().await.map_err(unreadable)?);
            }
            "format" => format = Some(field.text().await.map_err(unreadable)?),
            "csv_columns" => columns = Some(field.text().await.map_err(unreadable)?),
            other => return Err(format!("unknown field {other:?}")),
        }
    }
    match file {
        Some(file) if !file.is_empty() => Ok(BankForm {
            file,
            name,
            format,
            columns,
        }),
        Some(_) => Err("the statement file is empty".into()),
        None => Err("file is required".into()),
    }
}

/// The console's upload: `POST /bank/upload` from the bank page, the same
/// fields as the API; an operator's or supervisor's session. Back to the
/// bank page with the statement, or with the reason it was refused.
pub fn console_upload_router(
    state: AppState,
    sessions: tower_sessions::SessionManagerLayer<super::sessions::Store>,
) -> Router {
    Router::new()
        .route("/bank/upload", post(console_upload))
        .layer(sessions)
        .layer(axum::middleware::from_fn(super::same_origin))
        .layer(DefaultBodyLimit::max(UPLOAD_LIMIT))
        .layer(RequestBodyLimitLayer::new(UPLOAD_LIMIT + 64 * 1024))
        .with_state(state)
}

async fn console_upload(
    State(state): State<AppState>,
    super::console::Signed(user): super::console::Signed,
    mut form: Multipart,
) -> axum::response::Response {
    use app::error::AppError;
    let back =
        |query: String| axum::response::Redirect::to(&format!("/bank?{query}")).into_response();
    let refused = |err: AppError| back(app::ssr::error_query(&err));
    if !app::api::WORK.contains(&user.role) {
        return refused(AppError::Forbidden);
    }
    let form = match read_form(&mut form).await {
        Ok(form) => form,
        Err(detail) => return refused(AppError::Invalid { detail }),
    };
    match bank::import(&state.engine, form.import(&user.username)).await {
        Ok(imported) => back(
            form_urlencoded::Serializer::new(String::new())
                .append_pair("statement", &imported.statement.statement_id)
                .append_pair("duplicate", if imported.duplicate { "1" } else { "0" })
                .finish(),
        ),
        Err(BankError::Refused(detail)) => refused(AppError::Invalid { detail }),
        Err(BankError::Store(e)) => refused(app::ssr::internal(&e.to_string())),
    }
}

#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct StatementList {
    statements: Vec<BankStatement>,
}

/// `GET /api/v1/bank/statements`: the latest imported statements.
#[utoipa::path(get, path = "/api/v1/bank/statements", tag = "bank",
    responses((status = 200, description = "The latest 200 bank statements, newest first", body = StatementList)))]
pub async fn statements(
    State(engine): State<Engine>,
    _token: Bearer,
) -> Result<Json<StatementList>, ApiError> {
    let statements = crate::store::bank::statements(&engine.db.pool, LIST_LIMIT)
        .await
        .map_err(BankError::from)?;
    let statements = statements.into_iter().map(Into::into).collect();
    Ok(Json(StatementList { statements }))
}

#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct PayoutList {
    payouts: Vec<Payout>,
}

/// `GET /api/v1/bank/payouts`: the latest payouts and their match state.
#[utoipa::path(get, path = "/api/v1/bank/payouts", tag = "bank",
    responses((status = 200, description = "The latest 200 payouts by arrival date: PENDING, PAYOUT_MATCHED, PAYOUT_MISSING, PAYOUT_AMOUNT_MISMATCH or NOT_SENT", body = PayoutList)))]
pub async fn payouts(
    State(engine): State<Engine>,
    _token: Bearer,
) -> Result<Json<PayoutList>, ApiError> {
    let payouts = crate::store::bank::payouts(&engine.db.pool, LIST_LIMIT)
        .await
        .map_err(BankError::from)?;
    let payouts = payouts.into_iter().map(Into::into).collect();
    Ok(Json(PayoutList { payouts }))
}

/// `POST /api/v1/bank/match`: a matching pass now (the server also runs
/// one every minute).
#[utoipa::path(post, path = "/api/v1/bank/match", tag = "bank",
    responses((status = 200, description = "What the pass decided", body = MatchFigures)))]
pub async fn run_match(
    State(engine): State<Engine>,
    _token: Bearer,
) -> Result<Json<MatchFigures>, ApiError> {
    Ok(Json(bank::match_payouts(&engine, engine.now()).await?))
}

#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ExpectedDays {
    /// First day, YYYY-MM-DD (default: a week before today).
    #[param(example = "2026-12-01", format = Date)]
    from: Option<String>,
    /// Last day, YYYY-MM-DD (default: two weeks after today); at most 92
    /// days from the first.
    #[param(example = "2026-12-21", format = Date)]
    to: Option<String>,
}

/// `GET /api/v1/bank/expected?from=YYYY-MM-DD&to=YYYY-MM-DD`: per day,
/// provider account and currency, the cash expected at the bank and what
/// arrived, with each provider's learned payout delay.
#[utoipa::path(get, path = "/api/v1/bank/expected", tag = "bank",
    params(ExpectedDays),
    responses(
        (status = 200, description = "Payouts announced for each day plus reconciled days not paid out yet at their usual delay, against the bank's credits", body = ExpectedCash),
        (status = 400, description = "A day that does not read, or a span backwards or over 92 days", body = ApiError),
    ))]
pub async fn expected(
    State(engine): State<Engine>,
    _token: Bearer,
    Query(q): Query<ExpectedDays>,
) -> Result<Json<ExpectedCash>, ApiError> {
    Ok(Json(
        bank::cash::expected_cash(&engine, q.from.as_deref(), q.to.as_deref()).await?,
    ))
}
