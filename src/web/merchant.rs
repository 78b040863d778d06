//! The merchant API under `/api/v1/` (Bearer API token): create a payment
//! (with a required `Idempotency-Key`), read it, close it, refund it.
//! Each handler's `utoipa::path` is its entry in the OpenAPI document.

use super::AppState;
use super::api_error::ApiError;
use super::api_types::{Payment, PaymentDetail, RefundDetail, json_of};
use super::bearer::Bearer;
use crate::engine::{self, CreatePayment, CreateRefund, Engine, MerchantError};
use crate::engine::{Refused, RefusedKind};
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Serialize;

/// The merchant API's routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/whoami", get(whoami))
        .route("/api/v1/payments", post(create))
        .route("/api/v1/payments/{payment_no}", get(show))
        .route("/api/v1/payments/{payment_no}/close", post(close))
        .route("/api/v1/payments/{payment_no}/refunds", post(refund))
        .route("/api/v1/refunds/{refund_no}", get(show_refund))
}

/// The status of a refusal's answer.
fn refused_status(kind: RefusedKind) -> StatusCode {
    match kind {
        RefusedKind::NoSuchPayment => StatusCode::NOT_FOUND,
        RefusedKind::StateForbids => StatusCode::CONFLICT,
        RefusedKind::Unacceptable => StatusCode::UNPROCESSABLE_ENTITY,
    }
}

impl From<Refused> for ApiError {
    fn from(r: Refused) -> ApiError {
        ApiError {
            currency: r.currency,
            hold_reason: r.hold_reason,
            payment_status: r.payment_status,
            refundable_minor: r.refundable_minor,
            ..ApiError::new(refused_status(r.kind), r.error)
        }
    }
}

impl From<MerchantError> for ApiError {
    fn from(e: MerchantError) -> ApiError {
        let status = match e {
            MerchantError::Refused(r) => return r.into(),
            MerchantError::Invalid(_) => StatusCode::BAD_REQUEST,
            MerchantError::KeyReused => StatusCode::UNPROCESSABLE_ENTITY,
            MerchantError::NotClosable { .. } | MerchantError::ProviderRefused(_) => {
                StatusCode::CONFLICT
            }
            MerchantError::NotFound(_) => StatusCode::NOT_FOUND,
            MerchantError::ProviderUnknown(_) => StatusCode::GATEWAY_TIMEOUT,
            MerchantError::Store(ref err) => {
                tracing::error!(error = %err, "merchant API storage error");
                return ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "storage error; nothing was changed",
                );
            }
        };
        ApiError::new(status, e.to_string())
    }
}

/// The required `Idempotency-Key` (1–255 visible ASCII characters).
fn idempotency_key(headers: &HeaderMap) -> Result<&str, ApiError> {
    let key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let ok = !key.is_empty() && key.len() <= 255 && key.bytes().all(|b| b.is_ascii_graphic());
    ok.then_some(key).ok_or_else(|| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "an Idempotency-Key header (1–255 visible ASCII characters) is required",
        )
    })
}

/// A body that is not the JSON asked for: 400, saying why.
pub(super) fn unreadable(rejection: JsonRejection) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, rejection.body_text())
}

/// 201 with `made` as a JSON value (keys in order, as a repeat reads it
/// from the idempotency key).
fn created(made: impl Serialize) -> Response {
    let body = serde_json::to_value(made).unwrap_or_default();
    (StatusCode::CREATED, Json(body)).into_response()
}

/// Who is calling.
#[derive(Serialize, utoipa::ToSchema)]
pub struct WhoAmI {
    /// The API token's name.
    pub token: String,
}

/// A close's result: how `apply` took it, and the payment after it.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Closed {
    /// `applied`, `duplicate`, `out_of_order`, …
    pub result: &'static str,
    #[schema(value_type = Payment)]
    pub payment: serde_json::Value,
}

/// `GET /api/v1/whoami`: the smallest proof a token works.
#[utoipa::path(get, path = "/api/v1/whoami", tag = "merchant",
    responses((status = 200, description = "The token is valid", body = WhoAmI)))]
pub async fn whoami(Bearer(token): Bearer) -> Json<WhoAmI> {
    Json(WhoAmI { token: token.name })
}

/// `POST /api/v1/payments`.
#[utoipa::path(post, path = "/api/v1/payments", tag = "merchant",
    params(("Idempotency-Key" = String, Header, min_length = 1, max_length = 255, pattern = "^[!-~]+$",
        description = "The same key and body always get the first answer again")),
    request_body = CreatePayment,
    responses(
        (status = 201, description = "Created; the provider is asked by a worker", body = Payment),
        (status = 400, description = "Missing Idempotency-Key or invalid body", body = ApiError),
        (status = 409, description = "The order already has a live payment attempt", body = ApiError),
        (status = 422, description = "The Idempotency-Key was used with another body", body = ApiError),
    ))]
pub async fn create(
    State(engine): State<Engine>,
    Bearer(token): Bearer,
    headers: HeaderMap,
    body: Result<Json<CreatePayment>, JsonRejection>,
) -> Result<Response, ApiError> {
    let key = idempotency_key(&headers)?;
    let Json(req) = body.map_err(unreadable)?;
    // Idempotency keys are kept under the token's name, as they always
    // were: a retry across an upgrade still finds its first answer.
    let payment = engine.create_payment(&token.name, key, &req).await?;
    Ok(created(Payment::from(payment)))
}

/// `POST /api/v1/payments/{payment_no}/refunds`.
#[utoipa::path(post, path = "/api/v1/payments/{payment_no}/refunds", tag = "merchant",
    params(("payment_no" = String, Path, max_length = 64, pattern = "^[!-~]+$"),
        ("Idempotency-Key" = String, Header, min_length = 1, max_length = 255, pattern = "^[!-~]+$",
        description = "The same key and body always get the first answer again")),
    request_body = CreateRefund,
    responses(
        (status = 201, description = "Requested; the provider is asked by a worker", body = RefundDetail),
        (status = 400, description = "Missing Idempotency-Key, invalid payment number or body", body = ApiError),
        (status = 404, description = "No such payment", body = ApiError),
        (status = 409, description = "Not refundable now (status, hold, balance)", body = ApiError),
        (status = 422, description = "Another currency, an unconfigured provider, or a reused Idempotency-Key", body = ApiError),
    ))]
pub async fn refund(
    State(engine): State<Engine>,
    Bearer(token): Bearer,
    Path(payment_no): Path<String>,
    headers: HeaderMap,
    body: Result<Json<CreateRefund>, JsonRejection>,
) -> Result<Response, ApiError> {
    let key = idempotency_key(&headers)?;
    let Json(req) = body.map_err(unreadable)?;
    let kept = engine
        .request_refund(&token.name, key, &payment_no, &req)
        .await?;
    let refund = engine::RefundDetail::from_kept(kept)?;
    Ok(created(RefundDetail::from(refund)))
}

/// `GET /api/v1/refunds/{refund_no}`.
#[utoipa::path(get, path = "/api/v1/refunds/{refund_no}", tag = "merchant",
    params(("refund_no" = String, Path, max_length = 64, pattern = "^[!-~]+$")),
    responses(
        (status = 200, description = "The refund", body = RefundDetail),
        (status = 404, description = "No such refund", body = ApiError),
    ))]
pub async fn show_refund(
    State(engine): State<Engine>,
    _token: Bearer,
    Path(refund_no): Path<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let refund = engine.refund_detail(&refund_no).await?;
    Ok(Json(json_of::<RefundDetail>(refund)))
}

/// `GET /api/v1/payments/{payment_no}`.
#[utoipa::path(get, path = "/api/v1/payments/{payment_no}", tag = "merchant",
    params(("payment_no" = String, Path, max_length = 64, pattern = "^[!-~]+$")),
    responses(
        (status = 200, description = "The payment with its effects, history, events, alerts, discrepancies and refunds", body = PaymentDetail),
        (status = 404, description = "No such payment", body = ApiError),
    ))]
pub async fn show(
    State(engine): State<Engine>,
    _token: Bearer,
    Path(payment_no): Path<String>,
) -> Result<Json<PaymentDetail>, ApiError> {
    Ok(Json(engine.payment_detail(&payment_no).await?.into()))
}

/// `POST /api/v1/payments/{payment_no}/close`.
#[utoipa::path(post, path = "/api/v1/payments/{payment_no}/close", tag = "merchant",
    params(("payment_no" = String, Path, max_length = 64, pattern = "^[!-~]+$")),
    responses(
        (status = 200, description = "Closed at the provider and here", body = Closed),
        (status = 400, description = "The payment cannot be closed through its provider", body = ApiError),
        (status = 404, description = "No such payment", body = ApiError),
        (status = 409, description = "It has a result already, or the provider refused", body = ApiError),
        (status = 504, description = "The provider could not be reached; nothing changed, try again", body = ApiError),
    ))]
pub async fn close(
    State(engine): State<Engine>,
    _token: Bearer,
    Path(payment_no): Path<String>,
) -> Result<Json<Closed>, ApiError> {
    let applied = engine.close_payment(&payment_no).await?;
    let detail = engine.payment_detail(&payment_no).await?;
    Ok(Json(Closed {
        result: applied.class(),
        payment: json_of::<Payment>(detail.payment),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The engine keeps a refusal under the idempotency key with the status
    /// the API answers it with: a repeat gets the same.
    #[test]
    fn refusals_are_answered_with_the_status_they_are_kept_with() {
        for kind in RefusedKind::ALL {
            assert_eq!(
                i64::from(refused_status(kind).as_u16()),
                kind.kept_status(),
                "{kind:?}"
            );
        }
    }
}
