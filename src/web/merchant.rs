//! The merchant API under `/api/v1/` (Bearer API token): create a payment
//! (with a required `Idempotency-Key`), read it, close it, refund it.
//! Each handler's `utoipa::path` is its entry in the OpenAPI document.

use super::api_error::{ApiError, error};
use crate::accounts::Accounts;
use crate::engine::RefundDetail;
use crate::engine::{CreatePayment, CreateRefund, Engine, MerchantError, PaymentDetail};
use crate::store::payments::PaymentRow;
use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRef, FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// The calling API token's name.
pub struct Merchant(pub String);

impl<S> FromRequestParts<S> for Merchant
where
    Accounts: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Response> {
        let unauthorized = || {
            let mut r = error(
                StatusCode::UNAUTHORIZED,
                "a valid API token is required (Authorization: Bearer …)",
            );
            r.headers_mut()
                .insert(header::WWW_AUTHENTICATE, "Bearer".parse().expect("static"));
            r
        };
        let token = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .ok_or_else(unauthorized)?;
        match Accounts::from_ref(state)
            .authenticate_token(token.trim())
            .await
        {
            Ok(Some(name)) => Ok(Merchant(name)),
            Ok(None) => Err(unauthorized()),
            Err(e) => Err(error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())),
        }
    }
}

fn merchant_error(e: MerchantError) -> Response {
    let status = match &e {
        MerchantError::Invalid(_) => StatusCode::BAD_REQUEST,
        MerchantError::KeyReused => StatusCode::UNPROCESSABLE_ENTITY,
        MerchantError::LiveAttempt(_)
        | MerchantError::NotClosable { .. }
        | MerchantError::ProviderRefused(_) => StatusCode::CONFLICT,
        MerchantError::NotFound(_) => StatusCode::NOT_FOUND,
        MerchantError::ProviderUnknown(_) => StatusCode::GATEWAY_TIMEOUT,
        MerchantError::Store(e) => {
            tracing::error!(error = %e, "merchant API storage error");
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "storage error; nothing was changed",
            );
        }
    };
    error(status, e.to_string())
}

/// The required `Idempotency-Key`, or `None` when absent or malformed.
fn idempotency_key(headers: &HeaderMap) -> Option<&str> {
    let key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let ok = !key.is_empty() && key.len() <= 255 && key.bytes().all(|b| b.is_ascii_graphic());
    ok.then_some(key)
}

fn key_required() -> Response {
    error(
        StatusCode::BAD_REQUEST,
        "an Idempotency-Key header (1–255 visible ASCII characters) is required",
    )
}

fn answer(status: u16, body: serde_json::Value) -> Response {
    (
        StatusCode::from_u16(status).unwrap_or(StatusCode::OK),
        Json(body),
    )
        .into_response()
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
    #[schema(value_type = PaymentRow)]
    pub payment: serde_json::Value,
}

/// `GET /api/v1/whoami`: the smallest proof a token works.
#[utoipa::path(get, path = "/api/v1/whoami", tag = "merchant",
    responses((status = 200, description = "The token is valid", body = WhoAmI)))]
pub async fn whoami(Merchant(token): Merchant) -> Json<WhoAmI> {
    Json(WhoAmI { token })
}

/// `POST /api/v1/payments`.
#[utoipa::path(post, path = "/api/v1/payments", tag = "merchant",
    params(("Idempotency-Key" = String, Header, min_length = 1, max_length = 255, pattern = "^[!-~]+$",
        description = "The same key and body always get the first answer again")),
    request_body = CreatePayment,
    responses(
        (status = 201, description = "Created; the provider is asked by a worker", body = PaymentRow),
        (status = 400, description = "Missing Idempotency-Key or invalid body", body = ApiError),
        (status = 409, description = "The order already has a live payment attempt", body = ApiError),
        (status = 422, description = "The Idempotency-Key was used with another body", body = ApiError),
    ))]
pub async fn create(
    State(engine): State<Engine>,
    Merchant(scope): Merchant,
    headers: HeaderMap,
    body: Result<Json<CreatePayment>, JsonRejection>,
) -> Response {
    let Some(key) = idempotency_key(&headers) else {
        return key_required();
    };
    let Json(req) = match body {
        Ok(b) => b,
        Err(rejection) => return error(StatusCode::BAD_REQUEST, rejection.body_text()),
    };
    match engine.create_payment(&scope, key, &req).await {
        Ok((status, body)) => answer(status, body),
        Err(e) => merchant_error(e),
    }
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
    Merchant(scope): Merchant,
    Path(payment_no): Path<String>,
    headers: HeaderMap,
    body: Result<Json<CreateRefund>, JsonRejection>,
) -> Response {
    let Some(key) = idempotency_key(&headers) else {
        return key_required();
    };
    let Json(req) = match body {
        Ok(b) => b,
        Err(rejection) => return error(StatusCode::BAD_REQUEST, rejection.body_text()),
    };
    match engine.request_refund(&scope, key, &payment_no, &req).await {
        Ok((status, body)) => answer(status, body),
        Err(e) => merchant_error(e),
    }
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
    _m: Merchant,
    Path(refund_no): Path<String>,
) -> Response {
    match engine.refund_detail(&refund_no).await {
        Ok(body) => Json(body).into_response(),
        Err(e) => merchant_error(e),
    }
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
    _m: Merchant,
    Path(payment_no): Path<String>,
) -> Response {
    match engine.payment_detail(&payment_no).await {
        Ok(detail) => Json(detail).into_response(),
        Err(e) => merchant_error(e),
    }
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
    _m: Merchant,
    Path(payment_no): Path<String>,
) -> Response {
    match engine.close_payment(&payment_no).await {
        Ok(applied) => match engine.payment_detail(&payment_no).await {
            Ok(detail) => Json(Closed {
                result: applied.class(),
                payment: detail.payment,
            })
            .into_response(),
            Err(e) => merchant_error(e),
        },
        Err(e) => merchant_error(e),
    }
}
