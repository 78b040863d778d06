//! HTTP: the axum router with the console (Leptos pages and server
//! functions), health, readiness, metrics, and the layers every request
//! passes: body limit, same-origin check for state changes, sessions.

pub mod api_error;
pub mod console;
pub mod listener;
pub mod merchant;
pub mod openapi;
pub mod recon;
pub mod sessions;
pub mod webhooks;

use crate::accounts::Accounts;
use crate::engine::Engine;
use crate::metrics::Metrics;
use app::ssr::{SharedBackend, SharedConsole};
use app::{App, shell};
use axum::Router;
use axum::extract::{FromRef, Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use leptos::config::LeptosOptions;
use leptos::prelude::provide_context;
use leptos_axum::{LeptosRoutes, generate_route_list};
use std::sync::Arc;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::timeout::TimeoutLayer;
use tower_sessions::cookie::SameSite;
use tower_sessions::cookie::time::Duration as CookieDuration;
use tower_sessions::{Expiry, SessionManagerLayer};

/// Largest request body accepted anywhere (webhooks set their own).
pub const BODY_LIMIT: usize = 64 * 1024;
pub const SESSION_COOKIE: &str = "reckon_session";
/// No request may hang: past this a 408 goes out and the work is dropped
/// (a webhook's group commit either committed before, or did not happen).
pub const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

#[derive(Clone, FromRef)]
pub struct AppState {
    pub leptos_options: LeptosOptions,
    pub accounts: Accounts,
    pub metrics: Metrics,
    pub engine: Engine,
}

/// `extra` is merged in front of everything (the in-process sandbox).
pub fn router(
    state: AppState,
    sessions: sessions::Store,
    cookie_secure: bool,
    extra: Router,
) -> Router {
    let backend: SharedBackend = Arc::new(state.accounts.clone());
    let console: SharedConsole = Arc::new(crate::console::Desk::new(state.engine.clone()));
    let context = move || {
        provide_context(backend.clone());
        provide_context(console.clone());
    };
    let routes = generate_route_list(App);
    let session_layer = SessionManagerLayer::new(sessions)
        .with_name(SESSION_COOKIE)
        .with_http_only(true)
        .with_same_site(SameSite::Strict)
        .with_secure(cookie_secure)
        .with_expiry(Expiry::OnInactivity(CookieDuration::hours(8)));
    let options = state.leptos_options.clone();

    let console = Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics_text))
        .route("/api/v1/openapi.json", get(openapi::document))
        .route("/api/v1/whoami", get(merchant::whoami))
        .route("/api/v1/payments", post(merchant::create))
        .route("/api/v1/payments/{payment_no}", get(merchant::show))
        .route("/api/v1/payments/{payment_no}/close", post(merchant::close))
        .route(
            "/api/v1/payments/{payment_no}/refunds",
            post(merchant::refund),
        )
        .route("/api/v1/refunds/{refund_no}", get(merchant::show_refund))
        .route("/api/v1/recon/runs/{run_id}", get(recon::show))
        .route("/api/v1/recon/days", get(recon::days))
        .route("/api/v1/recon/pulls", post(recon::pull))
        .route("/api/v1/recon/runs/{run_id}/resume", post(recon::resume))
        .route("/tickets.csv", get(console::export))
        .route("/evidence/{note_id}", get(console::download_evidence))
        .leptos_routes_with_context(&state, routes, context.clone(), move || {
            shell(options.clone())
        })
        .fallback(leptos_axum::file_and_error_handler_with_context::<
            AppState,
            _,
        >(context, shell))
        .layer(middleware::from_fn(unreadable_arguments_are_400))
        .layer(session_layer.clone())
        .layer(middleware::from_fn(same_origin))
        .layer(RequestBodyLimitLayer::new(BODY_LIMIT));
    // Providers' webhooks come from servers, not browsers: no session,
    // cookies or origin check on the hottest route; the handler itself
    // reads at most `WEBHOOK_LIMIT`.
    let provider_hooks = Router::new().route("/webhooks/{provider}", post(webhooks::receive));

    timed_and_counted(console, &state.metrics)
        .with_state(state.clone())
        .merge(extra)
        .merge(timed_and_counted(provider_hooks, &state.metrics).with_state(state.clone()))
        .merge(
            // Evidence files are larger than a form: their own limit, the
            // same session and origin checks.
            Router::new()
                .route("/tickets/{id}/evidence", post(console::upload_evidence))
                .layer(session_layer.clone())
                .layer(middleware::from_fn(same_origin))
                .layer(axum::extract::DefaultBodyLimit::max(
                    app::tickets::EVIDENCE_FILE_LIMIT + 16 * 1024,
                ))
                .layer(RequestBodyLimitLayer::new(
                    app::tickets::EVIDENCE_FILE_LIMIT + 32 * 1024,
                ))
                .with_state(state.clone()),
        )
        .merge(
            // A statement uploaded from the console: the statement limits,
            // the console's session and origin checks.
            Router::new()
                .route("/runs/upload", post(console::upload_statement))
                .layer(session_layer)
                .layer(middleware::from_fn(same_origin))
                .layer(axum::extract::DefaultBodyLimit::max(recon::UPLOAD_LIMIT))
                .layer(RequestBodyLimitLayer::new(recon::UPLOAD_LIMIT + 64 * 1024))
                .layer(TimeoutLayer::with_status_code(
                    axum::http::StatusCode::REQUEST_TIMEOUT,
                    std::time::Duration::from_secs(600),
                ))
                .with_state(state.clone()),
        )
        .merge(
            // Statements are larger than anything else: their own limits.
            Router::new()
                .route("/api/v1/recon/runs", post(recon::upload))
                .layer(axum::extract::DefaultBodyLimit::max(recon::UPLOAD_LIMIT))
                .layer(RequestBodyLimitLayer::new(recon::UPLOAD_LIMIT + 64 * 1024))
                .layer(TimeoutLayer::with_status_code(
                    axum::http::StatusCode::REQUEST_TIMEOUT,
                    std::time::Duration::from_secs(600),
                ))
                .with_state(state),
        )
        // Outermost, so the answers of every layer above and of the
        // fallback (404, 405) reach it.
        .layer(middleware::from_fn(api_error::uniform))
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

async fn metrics_text(State(metrics): State<Metrics>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        metrics.render(),
    )
        .into_response()
}

/// Cookie-authenticated state changes must come from this console's own
/// The server-function layer answers 500 when it cannot read a call's
/// arguments (missing, ill-typed, not a form) — before any of Reckon's code
/// runs, so `AppError::status` never sees it. That is the caller's mistake:
/// 400, the same body. Reckon's own failures are `AppError::Internal` and
/// stay 500.
async fn unreadable_arguments_are_400(req: Request, next: Next) -> Response {
    let path = req.uri().path();
    let server_fn =
        req.method() == Method::POST && path.starts_with("/api/") && !path.starts_with("/api/v1/");
    let res = next.run(req).await;
    if !server_fn || res.status() != StatusCode::INTERNAL_SERVER_ERROR {
        return res;
    }
    let (mut parts, body) = res.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, BODY_LIMIT).await else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    if matches!(
        serde_json::from_slice::<app::error::AppError>(&bytes),
        Ok(app::error::AppError::Transport(_))
    ) {
        parts.status = StatusCode::BAD_REQUEST;
    }
    Response::from_parts(parts, axum::body::Body::from(bytes))
}

/// pages: the `Origin` (or, lacking it, the `Referer`) must name this host.
/// Token-authenticated APIs, provider webhooks and the demo's in-process
/// sandbox carry no cookie and are exempt.
async fn same_origin(req: Request, next: Next) -> Response {
    let safe = matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    let path = req.uri().path();
    let exempt = ["/api/v1/", "/webhooks/", "/sandbox/"];
    if safe || exempt.iter().any(|p| path.starts_with(p)) {
        return next.run(req).await;
    }
    let headers = req.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| req.uri().authority().map(|a| a.to_string()));
    let claimed = headers
        .get(header::ORIGIN)
        .or_else(|| headers.get(header::REFERER))
        .and_then(|v| v.to_str().ok())
        .and_then(origin_authority);
    match (host, claimed) {
        (Some(host), Some(claimed)) if host.eq_ignore_ascii_case(&claimed) => next.run(req).await,
        (_, claimed) => {
            tracing::warn!(
                path,
                origin = claimed.as_deref().unwrap_or("-"),
                "state-changing request from another origin refused"
            );
            (
                StatusCode::FORBIDDEN,
                "refused: this request must come from the Reckon console's own pages (Origin mismatch)",
            )
                .into_response()
        }
    }
}

/// `host[:port]` of an `http(s)://host[:port][/…]` origin or URL.
fn origin_authority(value: &str) -> Option<String> {
    let rest = value
        .strip_prefix("http://")
        .or_else(|| value.strip_prefix("https://"))?;
    let authority = rest.split(['/', '?', '#']).next()?;
    (!authority.is_empty()).then(|| authority.to_owned())
}

/// Every request of the console, the APIs and the webhooks: answered 408
/// after `REQUEST_TIMEOUT`, and counted by method and status (the counter
/// gets only the metrics: a layer's state is cloned for every request).
fn timed_and_counted(router: Router<AppState>, metrics: &Metrics) -> Router<AppState> {
    router
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            REQUEST_TIMEOUT,
        ))
        .layer(middleware::from_fn_with_state(
            metrics.clone(),
            count_requests,
        ))
}

async fn count_requests(State(metrics): State<Metrics>, req: Request, next: Next) -> Response {
    let method = req.method().clone();
    let response = next.run(req).await;
    metrics.http(method.as_str(), response.status().as_u16());
    response
}

#[cfg(test)]
mod tests {
    use super::origin_authority;

    #[test]
    fn origins_reduce_to_their_authority() {
        assert_eq!(
            origin_authority("http://127.0.0.1:3000").as_deref(),
            Some("127.0.0.1:3000")
        );
        assert_eq!(
            origin_authority("https://reckon.example/users?x=1").as_deref(),
            Some("reckon.example")
        );
        assert_eq!(origin_authority("null"), None);
        assert_eq!(origin_authority("http://"), None);
    }
}
