//! The merchant API under `/api/v1/` (Bearer API token): create a payment
//! (with a required `Idempotency-Key`), read it, close it.

use crate::accounts::Accounts;
use crate::engine::{CreatePayment, CreateRefund, Engine, MerchantError};
use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRef, FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(serde_json::json!({ "error": message.into() }))).into_response()
}

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

pub async fn close(
    State(engine): State<Engine>,
    _m: Merchant,
    Path(payment_no): Path<String>,
) -> Response {
    match engine.close_payment(&payment_no).await {
        Ok(applied) => match engine.payment_detail(&payment_no).await {
            Ok(detail) => {
                Json(serde_json::json!({ "result": applied.class(), "payment": detail.payment }))
                    .into_response()
            }
            Err(e) => merchant_error(e),
        },
        Err(e) => merchant_error(e),
    }
}
