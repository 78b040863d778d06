//! `POST /webhooks/{provider}`: limits before reading (content type, size),
//! then the engine's intake.

use crate::engine::{Engine, Refusal};
use axum::Json;
use axum::extract::{Path, Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

/// Largest webhook body read.
pub const WEBHOOK_LIMIT: usize = 64 * 1024;

fn refuse(status: StatusCode, message: &str) -> Response {
    (status, Json(serde_json::json!({ "error": message }))).into_response()
}

pub async fn receive(
    State(engine): State<Engine>,
    Path(name): Path<String>,
    req: Request,
) -> Response {
    let Some(provider) = engine.providers.get(&name).cloned() else {
        return refuse(StatusCode::NOT_FOUND, "unknown provider");
    };
    let headers = req.headers().clone();
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<i64>().ok());
    let trace_id = uuid::Uuid::new_v4().simple().to_string();
    let refusal = |kind, reason| Refusal {
        provider: provider.as_ref(),
        kind,
        reason,
        headers: &headers,
        body: b"",
        body_len: declared.unwrap_or(-1),
        claimed_payment: None,
        trace_id: &trace_id,
    };
    if !provider.accepts(content_type) {
        let reason = format!("content type {content_type:?} is not one this provider sends");
        engine.refuse(&refusal("content_type", &reason)).await;
        return refuse(StatusCode::UNSUPPORTED_MEDIA_TYPE, &reason);
    }
    let too_large = "body larger than 64 KiB";
    if declared.is_some_and(|n| n > WEBHOOK_LIMIT as i64) {
        engine.refuse(&refusal("too_large", too_large)).await;
        return refuse(StatusCode::PAYLOAD_TOO_LARGE, too_large);
    }
    let body = match axum::body::to_bytes(req.into_body(), WEBHOOK_LIMIT).await {
        Ok(body) => body,
        Err(_) => {
            engine.refuse(&refusal("too_large", too_large)).await;
            return refuse(StatusCode::PAYLOAD_TOO_LARGE, too_large);
        }
    };
    engine.receive(&provider, &headers, &body).await
}
