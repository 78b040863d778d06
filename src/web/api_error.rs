//! The one shape of every error answer under `/api/v1/`:
//! `{"error": "what went wrong"}`, the `Error` schema of the OpenAPI
//! document. Handlers answer with an [`ApiError`] (or [`error`]);
//! [`uniform`] rewrites the answers that axum, tower-http and the router's
//! fallback make on their own (rejections, 404, 405, 408, 413) into it.

use axum::Json;
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// An error answer. Only `error` is always there; a refused refund adds the
/// figures that explain the refusal.
// (These lines are the `Error` schema's description in the OpenAPI
// document; `status` is the answer's, not the body's.)
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Error)]
pub struct ApiError {
    /// The answer's status (not in the body).
    #[serde(skip)]
    pub status: StatusCode,
    /// What went wrong, for a person to read.
    pub error: String,
    /// The payment's currency, when a refund named another.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    /// Why reconciliation holds the payment, when that refused a refund.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hold_reason: Option<String>,
    /// The payment's status, when it refused a refund.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payment_status: Option<String>,
    /// What is left to refund (minor units), when a refund asked for more.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refundable_minor: Option<i64>,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            error: message.into(),
            currency: None,
            hold_reason: None,
            payment_status: None,
            refundable_minor: None,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        // Through a JSON value, whose keys are in order: so are the answers
        // kept under idempotency keys, and a repeat reads as the first.
        let body = serde_json::to_value(&self).unwrap_or_default();
        (self.status, Json(body)).into_response()
    }
}

/// The answer of an error: `status`, and `message` as its `error`.
pub fn error(status: StatusCode, message: impl Into<String>) -> Response {
    ApiError::new(status, message).into_response()
}

/// Plain-text rejections are a line or two; anything longer is a page.
const TEXT_LIMIT: usize = 4096;

/// Error answers under `/api/v1/` that are not JSON become an [`ApiError`]:
/// a plain-text message (a rejection's) is kept, anything else (the
/// console's 404 page, an empty 405, 408 or 413) is said in words.
pub async fn uniform(req: Request, next: Next) -> Response {
    let path = req.uri().path();
    if path != "/api/v1" && !path.starts_with("/api/v1/") {
        return next.run(req).await;
    }
    let (method, path) = (req.method().clone(), path.to_owned());
    let res = next.run(req).await;
    let status = res.status();
    let content_type = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    if !(status.is_client_error() || status.is_server_error())
        || content_type.starts_with("application/json")
    {
        return res;
    }
    let (mut parts, body) = res.into_parts();
    let text = if content_type.starts_with("text/plain") {
        axum::body::to_bytes(body, TEXT_LIMIT)
            .await
            .ok()
            .and_then(|b| String::from_utf8(b.to_vec()).ok())
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty())
    } else {
        None
    };
    let message = text.unwrap_or_else(|| in_words(status, &method, &path));
    let mut answer = error(status, message);
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    std::mem::swap(answer.headers_mut(), &mut parts.headers);
    answer
}

fn in_words(status: StatusCode, method: &Method, path: &str) -> String {
    match status {
        StatusCode::NOT_FOUND => format!("no such route: {path} (see /api/v1/openapi.json)"),
        StatusCode::METHOD_NOT_ALLOWED => format!("{method} is not allowed on {path}"),
        StatusCode::PAYLOAD_TOO_LARGE => "the request body is too large".to_owned(),
        StatusCode::REQUEST_TIMEOUT => "the request took too long and was dropped".to_owned(),
        other => other
            .canonical_reason()
            .unwrap_or("the request failed")
            .to_owned(),
    }
}
