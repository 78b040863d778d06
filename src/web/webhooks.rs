//! `POST /webhooks/{provider}`: limits before reading (content type, size),
//! then the engine's intake.

use crate::engine::Engine;
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
    if !provider.accepts(content_type) {
        return refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported content type",
        );
    }
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > WEBHOOK_LIMIT) {
        return refuse(StatusCode::PAYLOAD_TOO_LARGE, "body larger than 64 KiB");
    }
    let Ok(body) = axum::body::to_bytes(req.into_body(), WEBHOOK_LIMIT).await else {
        return refuse(StatusCode::PAYLOAD_TOO_LARGE, "body larger than 64 KiB");
    };
    engine.receive(&provider, &headers, &body).await
}
