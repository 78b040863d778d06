//! The API token of a call to the merchant and reconciliation APIs:
//! `Authorization: Bearer …`, one of the tokens `reckon token create`
//! made. Without a valid one the call is answered 401 with a
//! `WWW-Authenticate: Bearer` challenge, before its handler runs.

use super::api_error::error;
use crate::accounts::Accounts;
use axum::extract::{FromRef, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::response::Response;

/// The calling API token's name.
pub struct Bearer(pub String);

impl<S> FromRequestParts<S> for Bearer
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
            Ok(Some(name)) => Ok(Bearer(name)),
            Ok(None) => Err(unauthorized()),
            Err(e) => Err(error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())),
        }
    }
}
