//! The API token of a call to the merchant and reconciliation APIs:
//! `Authorization: Bearer …`, one of the tokens `reckon token create` or
//! the console's tokens page made. Without a usable one — none, unknown,
//! revoked, expired, or its owner disabled — the call is answered 401 with
//! a `WWW-Authenticate: Bearer` challenge; with one that lacks the scope
//! its route needs ([`ROUTES`]), 403 naming the scope. Either way before
//! the handler runs.

use super::api_error::error;
use crate::accounts::{Accounts, ApiToken, TokenCheck};
use app::tokens::Scope;
use axum::extract::{FromRef, FromRequestParts, MatchedPath};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;

/// What a route asks of the calling token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// This scope.
    Scope(Scope),
    /// Only a usable token: `whoami`, an integration's check of its own
    /// token, whatever it may do.
    Token,
}

use Need::Scope as S;

/// Every `/api/v1` route that takes a token, by method and path as
/// routed, with the one scope it needs. The OpenAPI document states each
/// from here; a route missing here is refused to every token.
pub const ROUTES: &[(&str, &str, Need)] = &[
    ("get", "/api/v1/whoami", Need::Token),
    ("post", "/api/v1/payments", S(Scope::PaymentsWrite)),
    (
        "get",
        "/api/v1/payments/{payment_no}",
        S(Scope::PaymentsRead),
    ),
    (
        "post",
        "/api/v1/payments/{payment_no}/close",
        S(Scope::PaymentsWrite),
    ),
    (
        "post",
        "/api/v1/payments/{payment_no}/refunds",
        S(Scope::RefundsWrite),
    ),
    ("get", "/api/v1/refunds/{refund_no}", S(Scope::PaymentsRead)),
    ("post", "/api/v1/recon/runs", S(Scope::ReconWrite)),
    ("post", "/api/v1/recon/previews", S(Scope::ReconRead)),
    (
        "post",
        "/api/v1/recon/runs/{run_id}/preview",
        S(Scope::ReconRead),
    ),
    ("get", "/api/v1/recon/runs/{run_id}", S(Scope::ReconRead)),
    ("get", "/api/v1/recon/days", S(Scope::ReconRead)),
    ("get", "/api/v1/disputes", S(Scope::ReconRead)),
    ("post", "/api/v1/recon/pulls", S(Scope::ReconWrite)),
    ("post", "/api/v1/recon/settlements", S(Scope::ReconWrite)),
    (
        "post",
        "/api/v1/recon/runs/{run_id}/resume",
        S(Scope::ReconWrite),
    ),
    (
        "get",
        "/api/v1/recon/runs/{run_id}/file",
        S(Scope::StatementsDownload),
    ),
    (
        "get",
        "/api/v1/recon/runs/{run_id}/results.csv",
        S(Scope::ReconRead),
    ),
    (
        "get",
        "/api/v1/recon/runs/{run_id}/results.parquet",
        S(Scope::ReconRead),
    ),
    (
        "get",
        "/api/v1/recon/closes/{provider}/{date}",
        S(Scope::ReconRead),
    ),
    ("post", "/api/v1/recon/closes/verify", S(Scope::ReconRead)),
    ("post", "/api/v1/bank/statements", S(Scope::BankWrite)),
    ("get", "/api/v1/bank/statements", S(Scope::BankRead)),
    ("get", "/api/v1/bank/payouts", S(Scope::BankRead)),
    ("post", "/api/v1/bank/match", S(Scope::BankWrite)),
    ("get", "/api/v1/bank/expected", S(Scope::BankRead)),
    ("get", "/api/v1/bulk/jobs/{job_id}", S(Scope::ReconRead)),
    ("get", "/api/v1/outbox", S(Scope::OutboxRead)),
    ("get", "/api/v1/outbox/{message_id}", S(Scope::OutboxRead)),
    (
        "post",
        "/api/v1/outbox/{message_id}/resend",
        S(Scope::OutboxWrite),
    ),
    ("post", "/api/v1/outbox/resend", S(Scope::OutboxWrite)),
    ("post", "/api/v1/outbox/recover", S(Scope::OutboxWrite)),
    ("get", "/api/v1/outbox/jobs/{job_id}", S(Scope::OutboxRead)),
    (
        "post",
        "/api/v1/outbox/jobs/{job_id}/cancel",
        S(Scope::OutboxWrite),
    ),
    ("get", "/api/v1/sinks", S(Scope::OutboxRead)),
    ("post", "/api/v1/sinks/{name}/pause", S(Scope::SinksWrite)),
    ("post", "/api/v1/sinks/{name}/resume", S(Scope::SinksWrite)),
    ("post", "/api/v1/sinks/{name}/retry", S(Scope::SinksWrite)),
    ("get", "/api/v1/refused", S(Scope::WebhooksRead)),
    ("get", "/api/v1/refused/{id}", S(Scope::WebhooksRead)),
];

/// What the route `method path` (lowercase method, path as routed) needs.
pub fn need(method: &str, path: &str) -> Option<Need> {
    ROUTES
        .iter()
        .find(|(m, p, _)| m.eq_ignore_ascii_case(method) && *p == path)
        .map(|(_, _, need)| *need)
}

/// The calling API token, allowed its route.
pub struct Bearer(pub ApiToken);

fn unauthorized(message: &str) -> Response {
    let mut r = error(StatusCode::UNAUTHORIZED, message);
    r.headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    r
}

impl<S> FromRequestParts<S> for Bearer
where
    Accounts: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Response> {
        let token = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .ok_or_else(|| {
                unauthorized("a valid API token is required (Authorization: Bearer …)")
            })?;
        let token = match Accounts::from_ref(state)
            .authenticate_token(token.trim())
            .await
        {
            Ok(TokenCheck::Valid(token)) => token,
            Ok(TokenCheck::Unknown) => {
                return Err(unauthorized(
                    "a valid API token is required (Authorization: Bearer …)",
                ));
            }
            Ok(TokenCheck::Revoked) => return Err(unauthorized("this API token was revoked")),
            Ok(TokenCheck::Expired) => return Err(unauthorized("this API token has expired")),
            Ok(TokenCheck::OwnerDisabled) => {
                return Err(unauthorized(
                    "this API token's owner is disabled, and their tokens with them",
                ));
            }
            Err(e) => return Err(error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())),
        };
        let path = parts
            .extensions
            .get::<MatchedPath>()
            .map(|p| p.as_str().to_owned())
            .unwrap_or_default();
        let method = parts.method.as_str().to_ascii_lowercase();
        match need(&method, &path) {
            Some(Need::Token) => Ok(Bearer(token)),
            Some(Need::Scope(scope)) if token.allows(scope) => Ok(Bearer(token)),
            Some(Need::Scope(scope)) => {
                tracing::warn!(token = %token.name, %method, %path, %scope, "API call refused: scope missing");
                let mut r = error(
                    StatusCode::FORBIDDEN,
                    format!(
                        "this API token lacks the scope {scope}, which {} {path} needs",
                        method.to_ascii_uppercase()
                    ),
                );
                // RFC 6750: the scope that would have been enough.
                if let Ok(v) = HeaderValue::from_str(&format!(
                    "Bearer error=\"insufficient_scope\", scope=\"{scope}\""
                )) {
                    r.headers_mut().insert(header::WWW_AUTHENTICATE, v);
                }
                Err(r)
            }
            None => {
                // Refused rather than open: a route added without its scope.
                tracing::error!(%method, %path, "API route without a declared scope");
                Err(error(
                    StatusCode::FORBIDDEN,
                    format!(
                        "{} {path} declares no scope, so no token may call it",
                        method.to_ascii_uppercase()
                    ),
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_route_is_listed_once() {
        for (i, (m, p, _)) in ROUTES.iter().enumerate() {
            assert!(
                !ROUTES[..i].iter().any(|(m2, p2, _)| m2 == m && p2 == p),
                "{m} {p} twice"
            );
        }
    }

    #[test]
    fn every_scope_opens_some_route() {
        for scope in Scope::ALL {
            assert!(
                ROUTES.iter().any(|(_, _, n)| *n == Need::Scope(scope)),
                "{scope} opens nothing"
            );
        }
    }
}
