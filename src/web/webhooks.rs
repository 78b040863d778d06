//! `POST /webhooks/{provider}`: limits before reading (content type, size),
//! then the engine's intake. Every answer on a provider's route is in that
//! provider's protocol, refusals before reading included.

use crate::engine::{Engine, Refusal};
use crate::providers::{Answer, Reply};
use axum::Json;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use std::net::SocketAddr;

/// Largest webhook body read.
pub const WEBHOOK_LIMIT: usize = 64 * 1024;
/// A refused body is still read to its end, up to this much, and dropped as
/// it comes: a connection closed with unread data is reset, and the sender
/// may see the reset instead of the answer that says why.
const DRAIN_LIMIT: usize = 1024 * 1024;

/// A provider's reply, byte for byte.
fn send(reply: Reply) -> Response {
    let body = if reply.body.is_empty() {
        Body::empty()
    } else {
        Body::from(reply.body)
    };
    let mut response = Response::new(body);
    *response.status_mut() = reply.status;
    if let Some(content_type) = reply.content_type {
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    }
    response
}

fn refuse(status: StatusCode, message: &str) -> Response {
    (status, Json(serde_json::json!({ "error": message }))).into_response()
}

/// The body if it is at most `keep` bytes, else `Ok(None)` — read to its
/// end all the same (up to `DRAIN_LIMIT`, dropped as it comes: see there).
async fn read_body(body: Body, keep: usize) -> Result<Option<Vec<u8>>, axum::Error> {
    let mut stream = body.into_data_stream();
    let mut out = Vec::new();
    let mut read = 0;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        read += chunk.len();
        if read <= keep {
            out.extend_from_slice(&chunk);
        } else if read > DRAIN_LIMIT {
            break;
        }
    }
    Ok((read <= keep).then_some(out))
}

/// Reads and drops what the sender is still sending of a refused body.
async fn drain(body: Body) {
    let _ = read_body(body, 0).await;
}

pub async fn receive(
    State(engine): State<Engine>,
    Path(name): Path<String>,
    req: Request,
) -> Response {
    let (parts, body) = req.into_parts();
    let source = parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip().to_string());
    let Some(provider) = engine.providers.get(&name).cloned() else {
        drain(body).await;
        return refuse(StatusCode::NOT_FOUND, "unknown provider");
    };
    let headers = parts.headers;
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
        source: source.as_deref(),
        verify_error: None,
    };
    if !provider.accepts(content_type) {
        let reason = format!("content type {content_type:?} is not one this provider sends");
        drain(body).await;
        engine.refuse(&refusal("content_type", &reason)).await;
        return send(provider.answer(&Answer::UnsupportedType(reason)));
    }
    let too_large = "body larger than 64 KiB";
    if declared.is_some_and(|n| n > WEBHOOK_LIMIT as i64) {
        drain(body).await;
        engine.refuse(&refusal("too_large", too_large)).await;
        return send(provider.answer(&Answer::TooLarge(too_large.into())));
    }
    let body = match read_body(body, WEBHOOK_LIMIT).await {
        Ok(Some(body)) => body,
        Ok(None) => {
            engine.refuse(&refusal("too_large", too_large)).await;
            return send(provider.answer(&Answer::TooLarge(too_large.into())));
        }
        Err(e) => return send(provider.answer(&Answer::Malformed(format!("body not read: {e}")))),
    };
    send(
        engine
            .receive(&provider, &headers, &body, source.as_deref())
            .await,
    )
}

/// The providers' route.
pub fn router() -> axum::Router<super::AppState> {
    axum::Router::new().route("/webhooks/{provider}", axum::routing::post(receive))
}
