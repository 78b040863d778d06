//! Server functions: the console's whole API. Each one is a thin shell that
//! passes the guard (or, for signing in, the throttle) and calls the backend.
//! Endpoints are fixed (`/api/<endpoint>`) so they can be called and tested
//! directly over HTTP.

use crate::error::AppError;
use crate::types::{Lang, Role, SessionInfo, User};
use leptos::prelude::*;

#[cfg(feature = "ssr")]
use crate::ssr::{self, guard, respond};

#[cfg(feature = "ssr")]
const ADMIN: &[Role] = &[Role::Admin];

/// Who is signed in (if anyone) and the language to show.
#[server(endpoint = "session")]
pub async fn whoami() -> Result<SessionInfo, AppError> {
    ssr::with_owners(ssr::session_info()).await
}

#[server(endpoint = "login")]
pub async fn login(username: String, password: String) -> Result<(), AppError> {
    respond(async {
        let backend = ssr::backend()?;
        let session = ssr::session().await?;
        let peer = ssr::peer().await?;
        match backend.login(&username, &password, &peer).await? {
            ssr::LoginOutcome::SignedIn(signed) => {
                ssr::start_session(&session, &signed).await?;
                leptos_axum::redirect("/");
            }
            ssr::LoginOutcome::SecondFactor(pending) => {
                mfa::await_second_step(&session, &pending).await?;
            }
        }
        Ok(())
    })
    .await
}

#[server(endpoint = "logout")]
pub async fn logout() -> Result<(), AppError> {
    respond(async {
        let caller = guard(Role::ALL).await?;
        let register: Option<String> = caller
            .session
            .get(ssr::SESSION_ID)
            .await
            .map_err(|e| ssr::internal(&format!("session read failed: {e}")))?;
        caller
            .backend
            .logout(&caller.user, register.as_deref())
            .await?;
        caller
            .session
            .flush()
            .await
            .map_err(|e| ssr::internal(&format!("session flush failed: {e}")))?;
        leptos_axum::redirect("/login");
        Ok(())
    })
    .await
}

/// Anyone may switch the language; a signed-in user's choice is remembered
/// on their account.
#[server(endpoint = "language")]
pub async fn set_language(lang: Lang) -> Result<(), AppError> {
    respond(async {
        let backend = ssr::backend()?;
        let session = ssr::session().await?;
        if let Some(user) = ssr::signed_in(&backend, &session).await? {
            backend.set_lang(&user, lang).await?;
        }
        session
            .insert(ssr::SESSION_LANG, lang)
            .await
            .map_err(|e| ssr::internal(&format!("session write failed: {e}")))?;
        Ok(())
    })
    .await
}

#[server(endpoint = "users/list")]
pub async fn list_users() -> Result<Vec<User>, AppError> {
    respond(async {
        let caller = guard(ADMIN).await?;
        caller.backend.list_users().await
    })
    .await
}

#[server(endpoint = "users/create")]
pub async fn create_user(username: String, role: Role, password: String) -> Result<User, AppError> {
    respond(async {
        let caller = guard(ADMIN).await?;
        caller
            .backend
            .create_user(&caller.user, &username, role, &password)
            .await
    })
    .await
}

#[server(endpoint = "users/role")]
pub async fn set_role(user_id: String, role: Role) -> Result<(), AppError> {
    respond(async {
        let caller = guard(ADMIN).await?;
        caller.backend.set_role(&caller.user, &user_id, role).await
    })
    .await
}

/// A pending grant of `role` confirmed by a second admin.
#[server(endpoint = "users/confirm")]
pub async fn confirm_grant(user_id: String, role: Role) -> Result<(), AppError> {
    respond(async {
        let caller = guard(ADMIN).await?;
        caller
            .backend
            .confirm_grant(&caller.user, &user_id, role)
            .await
    })
    .await
}

/// A pending grant of `role` withdrawn: the user is an operator again.
#[server(endpoint = "users/revoke")]
pub async fn revoke_grant(user_id: String, role: Role) -> Result<(), AppError> {
    respond(async {
        let caller = guard(ADMIN).await?;
        caller
            .backend
            .revoke_grant(&caller.user, &user_id, role)
            .await
    })
    .await
}

#[server(endpoint = "users/password")]
pub async fn reset_password(user_id: String, password: String) -> Result<(), AppError> {
    respond(async {
        let caller = guard(ADMIN).await?;
        caller
            .backend
            .reset_password(&caller.user, &user_id, &password)
            .await
    })
    .await
}

/// Gives a user raw access (callbacks and refused webhooks unmasked,
/// each look audited) or takes it away; admins, never for themselves.
#[server(endpoint = "users/view-raw")]
pub async fn set_view_raw(user_id: String, allow: bool) -> Result<(), AppError> {
    respond(async {
        let caller = guard(ADMIN).await?;
        caller
            .backend
            .set_view_raw(&caller.user, &user_id, allow)
            .await
    })
    .await
}

#[server(endpoint = "users/disabled")]
pub async fn set_disabled(user_id: String, disabled: bool) -> Result<(), AppError> {
    respond(async {
        let caller = guard(ADMIN).await?;
        caller
            .backend
            .set_disabled(&caller.user, &user_id, disabled)
            .await
    })
    .await
}

mod tickets;
pub use tickets::*;

mod console;
pub use console::*;

mod bank;
pub use bank::*;
mod closes;
pub use closes::*;
mod bulk;
pub use bulk::*;
mod outbox;
pub use outbox::*;
// Outbox sinks.
mod sinks;
pub use sinks::*;
// Refused webhooks.
mod refused;
pub use refused::*;
// The approval policy.
mod policy;
pub use policy::*;
// API tokens.
mod settings;
pub use settings::*;

mod tokens;
pub use tokens::*;
// Console sessions.
mod sessions;
pub use sessions::*;
// The second factor.
mod mfa;
pub use mfa::*;
