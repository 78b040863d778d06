//! The operator's routes: `/healthz` (the process is up), `/readyz` (the
//! database answers, its file is still there, it is migrated) and
//! `/metrics` (Prometheus text).

use super::AppState;
use crate::accounts::Accounts;
use crate::metrics::Metrics;
use crate::store::gauges;
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics_text))
}

/// The process is up.
async fn healthz() -> &'static str {
    "ok"
}

/// The database answers and is migrated.
async fn readyz(State(accounts): State<Accounts>) -> Response {
    match accounts.db.readiness().await {
        Ok(()) => (StatusCode::OK, "ready").into_response(),
        Err(reason) => {
            tracing::warn!(%reason, "not ready");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                format!("not ready: {reason}"),
            )
                .into_response()
        }
    }
}

/// The counters as they stand, and the database's open alerts, tickets
/// and DEAD callbacks read now (a failed read leaves the last figures and
/// is logged: the scrape still answers).
async fn metrics_text(
    State(metrics): State<Metrics>,
    State(accounts): State<Accounts>,
) -> Response {
    match gauges::read(&accounts.db.pool).await {
        Ok(g) => metrics.state(&g),
        Err(error) => tracing::warn!(%error, "metrics: reading the database's state"),
    }
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        metrics.render(),
    )
        .into_response()
}
