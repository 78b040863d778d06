//! The API tokens page's server functions: admins only. Making a token
//! shows it once; revoking it stops its next call. Both are audited.

use crate::error::AppError;
use crate::tokens::{CreatedToken, TokenRow};
use leptos::prelude::*;

#[cfg(feature = "ssr")]
use crate::ssr::{console, guard, respond};
#[cfg(feature = "ssr")]
use crate::tokens::{MAX_EXPIRY_DAYS, Scope};
#[cfg(feature = "ssr")]
use crate::types::Role;

#[server(endpoint = "tokens/list")]
pub async fn list_tokens() -> Result<Vec<TokenRow>, AppError> {
    respond(async {
        let desk = console()?;
        guard(&[Role::Admin]).await?;
        desk.api_tokens().await
    })
    .await
}

/// A new token owned by the admin who makes it: `scopes` ticked (at least
/// one), expiring in `expires_days` days (blank: never).
#[server(endpoint = "tokens/create")]
pub async fn create_token(
    name: String,
    #[server(default)] scopes: Vec<String>,
    #[server(default)] expires_days: String,
) -> Result<CreatedToken, AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(&[Role::Admin]).await?;
        let invalid = |detail: String| AppError::Invalid { detail };
        let scopes = Scope::parse_list(scopes.iter().map(String::as_str)).map_err(invalid)?;
        let days = expires_days.trim();
        let expires_days = if days.is_empty() {
            None
        } else {
            Some(days.parse::<u32>().map_err(|_| {
                invalid(format!(
                    "the expiry is a number of days from 1 to {MAX_EXPIRY_DAYS}, or blank for never"
                ))
            })?)
        };
        desk.create_api_token(&caller.user, &name, &scopes, expires_days)
            .await
    })
    .await
}

#[server(endpoint = "tokens/revoke")]
pub async fn revoke_token(id: String) -> Result<(), AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(&[Role::Admin]).await?;
        desk.revoke_api_token(&caller.user, &id).await
    })
    .await
}
