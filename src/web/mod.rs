//! HTTP: the one router, made of each module's own — the console (Leptos
//! pages and server functions, and [`console`]'s routes), the merchant and
//! reconciliation APIs ([`merchant`], [`recon`], [`openapi`]), the
//! providers' webhooks ([`webhooks`]), health and metrics ([`health`]) —
//! and the layers every request passes: body limit, same-origin check for
//! state changes, sessions, one error shape under `/api/v1/`
//! ([`api_error`]).

pub mod api_error;
pub mod api_types;
pub mod assets;
pub mod bank;
pub mod bearer;
pub mod bulk;
pub mod console;
pub mod health;
pub mod listener;
pub mod merchant;
pub mod oidc;
pub mod openapi;
pub mod outbox;
pub mod proxy;
pub mod recon;
pub mod refused;
pub mod sessions;
pub mod sinks;
pub mod upload;
pub mod webhooks;

use crate::accounts::Accounts;
use crate::engine::Engine;
use crate::metrics::Metrics;
use app::ssr::{SharedBackend, SharedConsole};
use app::{App, shell};
use axum::Router;
use axum::extract::{FromRef, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use leptos::config::LeptosOptions;
use leptos::prelude::provide_context;
use leptos_axum::{LeptosRoutes, generate_route_list};
use std::sync::Arc;
use tower_http::compression::CompressionLayer;
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
    /// Sign-in through an OpenID Provider, when configured.
    pub sso: Option<Arc<crate::oidc::Sso>>,
    /// Where the console's compiled files are served from.
    pub site: assets::Site,
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
        // The record and its cookie outlive no idle session: they are saved
        // again whenever the register sees the session (about once a minute).
        .with_expiry(Expiry::OnInactivity(CookieDuration::microseconds(
            state.accounts.sign_in.idle_us,
        )));
    let options = state.leptos_options.clone();

    let console = Router::new()
        .merge(health::router())
        .merge(openapi::router())
        .merge(merchant::router())
        .merge(recon::router())
        .merge(bank::router())
        .merge(bulk::router())
        .merge(outbox::router())
        .merge(sinks::router())
        .merge(refused::router())
        .merge(console::router())
        .merge(oidc::router())
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
        .layer(RequestBodyLimitLayer::new(BODY_LIMIT))
        // Here as well as outermost: an error is made uniform before it is
        // compressed, as the outer layer could not read it after.
        .layer(middleware::from_fn(api_error::uniform))
        .layer(middleware::from_fn(console_headers))
        .layer(CompressionLayer::new());
    // Providers' webhooks come from servers, not browsers: no session,
    // cookies or origin check on the hottest route; the handler itself
    // reads at most `WEBHOOK_LIMIT`.
    let provider_hooks = webhooks::router();

    let assets = match state.leptos_options.site_pkg_dir.strip_prefix("pkg/") {
        Some(fingerprint) => state.site.router(fingerprint),
        None => Router::new(),
    };

    timed_and_counted(console, &state.metrics)
        .with_state(state.clone())
        .merge(assets)
        .merge(extra)
        .merge(timed_and_counted(provider_hooks, &state.metrics).with_state(state.clone()))
        .merge(console::upload_router(state.clone(), session_layer.clone()))
        .merge(bank::upload_router(state.clone()))
        .merge(bank::console_upload_router(state.clone(), session_layer))
        .merge(recon::upload_router(state))
        // Outermost, so the answers of every layer above and of the
        // fallback (404, 405) reach it.
        .layer(middleware::from_fn(api_error::uniform))
}

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

/// Every console answer: not sniffed, framed or referred beyond this origin;
/// pages and their data (amounts, ids) kept by no browser or proxy, static
/// files revalidated; an answer without a policy of its own (the pages set
/// theirs, with the script nonce) gets one that allows nothing.
async fn console_headers(req: Request, next: Next) -> Response {
    let mut res = next.run(req).await;
    let static_file = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| {
            [
                "text/css",
                "text/javascript",
                "application/javascript",
                "application/wasm",
                "image/",
                "font/",
            ]
            .iter()
            .any(|s| t.starts_with(s))
        });
    let h = res.headers_mut();
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static(if static_file {
            "no-cache"
        } else {
            "no-store"
        }));
    h.entry(header::CONTENT_SECURITY_POLICY)
        .or_insert(HeaderValue::from_static(
            "default-src 'none'; frame-ancestors 'none'; base-uri 'none'",
        ));
    res
}

/// Cookie-authenticated state changes must come from this console's own
/// pages: the `Origin` (or, lacking it, the `Referer`) must name this host.
/// Token-authenticated APIs, provider webhooks and the demo's in-process
/// sandbox carry no cookie and are exempt.
pub(crate) async fn same_origin(req: Request, next: Next) -> Response {
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

/// A response body sent as a producer hands its pieces over; an error ends
/// it. Fused: a compression layer may poll once more after the end.
pub(crate) fn channel_body<T>(
    rx: tokio::sync::mpsc::Receiver<Result<T, std::io::Error>>,
) -> axum::body::Body
where
    T: Into<axum::body::Bytes> + Send + 'static,
{
    use futures_util::StreamExt;
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    axum::body::Body::from_stream(stream.fuse())
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
